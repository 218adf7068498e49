//go:build verifyfault

package daemon

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/faults"
	"github.com/petrelmq/petrel/internal/message"
)

// awaitSwitch waits until the slow disk is on as want: the signal is
// handled on the goroutine faults.Follow runs on.
func awaitSwitch(t *testing.T, sd *faults.SlowDisk, want bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for sd.On() != want {
		if time.Now().After(deadline) {
			t.Fatalf("slow disk still on=%v 10s after the signal", !want)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFaultSlowDiskFollowsSIGUSR1AndSIGUSR2(t *testing.T) {
	t.Setenv(faults.EnvVar, "slow-disk=1ms")
	b, err := StartBroker(smallBrokerConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	disks := registeredSlowDisks()
	sd := disks[len(disks)-1]
	if sd.Delay != time.Millisecond || sd.On() {
		t.Fatalf("slow disk: delay %v, on %v; want 1ms, off at start", sd.Delay, sd.On())
	}
	if err := b.Core().CreateTopic(broker.TopicConfig{Name: "T", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}); err != nil {
		t.Fatal(err)
	}
	send := func() {
		t.Helper()
		_, err := b.Core().Send(context.Background(), &broker.SendRequest{Topic: "T", QueueID: 0, Body: []byte("x"),
			Properties: message.EncodedProperties(message.EncodeProperties(map[string]string{"KEYS": "k"}))})
		if err != nil {
			t.Fatal(err)
		}
	}
	send()
	if n := sd.Delayed(); n != 0 {
		t.Fatalf("%d commit-log operations delayed before SIGUSR1; want 0", n)
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	awaitSwitch(t, sd, true)
	send()
	on := sd.Delayed()
	if on < 1 {
		t.Fatal("a send while the slow disk is on delayed no commit-log write or sync")
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	awaitSwitch(t, sd, false)
	send()
	if n := sd.Delayed(); n != on {
		t.Fatalf("%d delayed after SIGUSR2, %d before; want no more", n, on)
	}
}

func TestFaultBadSpecStopsStartBroker(t *testing.T) {
	t.Setenv(faults.EnvVar, "slow-disk=fast")
	b, err := StartBroker(smallBrokerConfig())
	if err == nil {
		b.Close()
		t.Fatal("StartBroker with a bad PETREL_TEST_FAULTS succeeded")
	}
	if !strings.Contains(err.Error(), "PETREL_TEST_FAULTS: faults: slow-disk=fast") {
		t.Fatalf("err = %v; want it to name the variable and the entry", err)
	}
}
