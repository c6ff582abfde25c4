package cache

import (
	"math"
	"testing"
	"time"
)

func TestExpirySaturates(t *testing.T) {
	tests := []struct {
		name      string
		from, ttl time.Duration
		want      time.Duration
	}{
		{"from plus ttl", time.Second, time.Minute, time.Second + time.Minute},
		{"from a time before the epoch", -time.Second, time.Minute, time.Minute - time.Second},
		{"past the largest duration: never", time.Hour, math.MaxInt64 - time.Minute, math.MaxInt64},
		{"zero ttl: at once", time.Hour, 0, math.MinInt64},
		{"negative ttl: at once", time.Hour, math.MinInt64, math.MinInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := expiry(tt.from, tt.ttl); got != tt.want {
				t.Fatalf("expiry(%v, %v) = %v, want %v", tt.from, tt.ttl, got, tt.want)
			}
		})
	}
}
