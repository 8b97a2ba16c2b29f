package store

import (
	"encoding/json"
	"testing"
	"time"
)

func TestJobJSONRoundTrip(t *testing.T) {
	j := Job{ID: 3, Type: "x", State: Running, BackoffBase: 1500 * time.Millisecond, BackoffMax: time.Hour, Data: json.RawMessage(`{"a":1}`), RunAt: time.Unix(5, 0).UTC(), CreatedAt: time.Unix(6, 0).UTC(), UpdatedAt: time.Unix(7, 0).UTC()}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(string(b))
	var k Job
	if err := json.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(k)
	if string(b) != string(b2) {
		t.Fatalf("%s\n%s", b, b2)
	}
}

func TestOutcomeText(t *testing.T) {
	for o := Inserted; o <= Requeued; o++ {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var back Outcome
		if err := json.Unmarshal(b, &back); err != nil || back != o {
			t.Errorf("%s: round trip gave %v, %v", o, back, err)
		}
	}
	var o Outcome
	if err := json.Unmarshal([]byte(`"bogus"`), &o); err == nil {
		t.Error("decoding an unknown outcome succeeded")
	}
}
