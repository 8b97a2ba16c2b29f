package store

import "math"

// Weighted round robin between groups (see docs/fairness.md): each group
// of a type has a virtual time, its turn; serving a group adds 1/weight;
// the group with the smallest turn goes next, ties to the smaller name.
// Stores keep the turns; these functions are the arithmetic they share.

// TurnBefore reports whether the turn (t1, g1) comes before (t2, g2).
func TurnBefore(t1 float64, g1 string, t2 float64, g2 string) bool {
	return t1 < t2 || (t1 == t2 && g1 < g2)
}

// TurnsWon is how many turns in a row a group at turn with weight wins
// against a rival at (rivalTurn, rivalGrp), at most want and at least 1:
// the turns turn + i/weight that come before the rival's.
func TurnsWon(turn float64, grp string, weight, rivalTurn float64, rivalGrp string, want int) int {
	const eps = 1e-9 // turns are sums of 1/weight: absorb rounding
	d := (rivalTurn - turn) * weight
	var k float64
	if grp < rivalGrp {
		k = math.Floor(d+eps) + 1 // turns i with i ≤ d
	} else {
		k = math.Ceil(d - eps) // turns i with i < d
	}
	return int(max(1, min(float64(want), k)))
}
