package postgres_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rotajobs/rota/internal/rules/fair"
	"github.com/rotajobs/rota/store"
)

// TestRefillSQL runs the head step's token bucket in SQL (refillSQL,
// burstSQL: headLimitedSQL checks and charges a rate with them) against
// fair's (fair.RateOf, Rate.Refill, Bucket.Open) on random buckets: rates
// per second, minute and hour, bursts set and default, buckets never
// refilled, clocks that read earlier than the last refill, and refills
// that reach the burst. The tokens agree to a float's error, the refill's
// time exactly, and so do the whole tokens the head step tests.
func TestRefillSQL(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	pers := []time.Duration{time.Second, time.Minute, time.Hour, 250 * time.Millisecond, 7 * time.Second}
	for seed := range uint64(400) {
		r := rand.New(rand.NewPCG(seed, 11))
		n := int64(1 + r.IntN(2_000_000))
		if r.IntN(3) == 0 {
			n = int64(1 + r.IntN(10))
		}
		per := pers[r.IntN(len(pers))]
		burst := int64(0)
		if r.IntN(2) == 0 {
			burst = int64(1 + r.IntN(1_000_000))
		}
		rate, ok := fair.RateOf(store.Rate{N: int(n), Per: per}, int(burst))
		if !ok {
			t.Fatalf("seed %d: no rate for %d/%v", seed, n, per)
		}
		now := int64(1_795_000_000_000_000) + r.Int64N(1_000_000_000)
		var at int64
		switch r.IntN(6) {
		case 0: // never refilled
		case 1: // a clock that reads earlier
			at = now + r.Int64N(5_000_000)
		default:
			at = now - r.Int64N([]int64{1_000, 1_000_000, 100_000_000}[r.IntN(3)])
		}
		tokens := r.Float64() * float64(rate.Burst)
		if r.IntN(4) == 0 {
			tokens = math.Floor(tokens)
		}
		gotT, gotAt, err := s.Refill(ctx, n, int64(per/time.Microsecond), burst, tokens, at, now)
		if err != nil {
			t.Fatal(err)
		}
		var atT time.Time
		if at != 0 {
			atT = time.UnixMicro(at).UTC()
		}
		b := fair.OpenBucket(rate, tokens, atT, time.UnixMicro(now).UTC())
		if math.Abs(gotT-b.Tokens) > 1e-9*math.Max(1, b.Tokens) || gotAt != b.At.UnixMicro() {
			t.Errorf("seed %d: %d/%v burst %d, %v tokens at %d, now %d: SQL refills to %v at %d, fair to %v at %d",
				seed, n, per, burst, tokens, at, now, gotT, gotAt, b.Tokens, b.At.UnixMicro())
		}
		// The whole tokens, as the head step tests them, unless a float's
		// error puts them either side of a whole number.
		if frac := b.Tokens - math.Floor(b.Tokens); frac > 1e-6 && frac < 1-1e-6 {
			if got := int64(math.Floor(gotT + 1e-9)); got != b.Max {
				t.Errorf("seed %d: SQL has %d whole tokens, fair %d", seed, got, b.Max)
			}
		}
	}
}
