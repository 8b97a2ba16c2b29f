package store

import "testing"

func TestTurnsWon(t *testing.T) {
	cases := []struct {
		turn       float64
		grp        string
		weight     float64
		rivalTurn  float64
		rivalGrp   string
		want, wins int
	}{
		{0, "a", 1, 0, "b", 10, 1},       // a tie goes to the smaller name
		{0, "b", 1, 0, "a", 10, 1},       // the popped group always wins its first turn
		{0, "b", 1, 1, "a", 10, 1},       // 0 < 1, then 1 ties and a wins
		{0, "a", 1, 1, "b", 10, 2},       // 0, and 1 wins the tie
		{0, "a", 3, 1, "b", 10, 4},       // 0, 1/3, 2/3, 1
		{1.0 / 3, "b", 3, 1, "a", 10, 2}, // 1/3, 2/3; 1 ties and a wins
		{0, "a", 1, 100, "b", 5, 5},      // bounded by want
	}
	for _, c := range cases {
		if got := TurnsWon(c.turn, c.grp, c.weight, c.rivalTurn, c.rivalGrp, c.want); got != c.wins {
			t.Errorf("TurnsWon(%v, %q, w%v, vs %v %q, want %d) = %d, want %d", c.turn, c.grp, c.weight, c.rivalTurn, c.rivalGrp, c.want, got, c.wins)
		}
	}
	if !TurnBefore(0, "b", 1, "a") || !TurnBefore(1, "a", 1, "b") || TurnBefore(1, "b", 1, "b") {
		t.Error("TurnBefore orders by turn, then name, strictly")
	}
}
