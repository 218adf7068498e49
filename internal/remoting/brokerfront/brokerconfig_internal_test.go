package brokerfront

import (
	"testing"
	"time"
)

func TestDelayLevelsAreWrittenInRocketMQsUnits(t *testing.T) {
	got := delayLevels([]time.Duration{time.Second, 90 * time.Second, 2 * time.Minute, time.Hour, 48 * time.Hour, 1500 * time.Millisecond})
	if want := "1s 90s 2m 1h 2d 1500ms"; got != want {
		t.Fatalf("delay levels %q, want %q", got, want)
	}
}
