package cluster

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseTopologyWithControllers(t *testing.T) {
	for _, tc := range []struct {
		in, want, errPart string
		groups            []Group
		ctl               int
	}{
		{in: "groups=1,replicas=3,namesrv=3,controllers=3", want: "groups=1,replicas=3,namesrv=3,controllers=3", groups: []Group{{"broker-a", 3}}, ctl: 3},
		{in: "namesrv=3,controllers=1,replicas=2", want: "groups=1,replicas=2,namesrv=3,controllers=1", groups: []Group{{"broker-a", 2}}, ctl: 1},
		{in: "replicas=3+2,namesrv=3,controllers=3", want: "groups=2,replicas=3+2,namesrv=3,controllers=3", groups: []Group{{"broker-a", 3}, {"broker-b", 2}}, ctl: 3},
		{in: "groups=2,replicas=3+2", want: "groups=2,replicas=3+2,namesrv=1", groups: []Group{{"broker-a", 3}, {"broker-b", 2}}},
		{in: "groups=2,replicas=2,controllers=0", want: "groups=2,replicas=2,namesrv=1", groups: []Group{{"broker-a", 2}, {"broker-b", 2}}},
		{in: "namesrv=1,controllers=3", errPart: "at most namesrv=1"},
		{in: "namesrv=3,controllers=10", errPart: "controllers=10: want a whole number from 0 to 9"},
		{in: "groups=3,replicas=3+2", errPart: "groups=3 but replicas names 2 groups"},
		{in: "replicas=3+0", errPart: "joined by +"},
		{in: "replicas=3+x", errPart: "joined by +"},
	} {
		got, err := ParseTopology(tc.in)
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), tc.errPart) {
				t.Errorf("ParseTopology(%q) error %v, want one containing %q", tc.in, err, tc.errPart)
			}
			continue
		}
		if err != nil || got.Name != tc.want || got.Controllers != tc.ctl || fmt.Sprint(got.Groups) != fmt.Sprint(tc.groups) {
			t.Errorf("ParseTopology(%q) = %+v, %v; want %s, %d controllers, groups %v", tc.in, got, err, tc.want, tc.ctl, tc.groups)
			continue
		}
		if err := got.Validate(); err != nil {
			t.Errorf("ParseTopology(%q) gives a topology Start refuses: %v", tc.in, err)
		}
		if again, err := ParseTopology(got.Name); err != nil || again.Name != got.Name {
			t.Errorf("the name %q does not parse back to itself: %+v, %v", got.Name, again, err)
		}
	}
	bad := Single()
	bad.Controllers = 1
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "embeds its own single voter") {
		t.Errorf("single with controllers: %v", err)
	}
	over := Replicated(1, 3, 1)
	over.Controllers = 3
	if err := over.Validate(); err == nil {
		t.Error("3 controllers in 1 name server validates")
	}
}
