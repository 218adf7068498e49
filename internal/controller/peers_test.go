package controller

import (
	"slices"
	"strings"
	"testing"
)

func TestParsePeers(t *testing.T) {
	got, err := ParsePeers(" 1@10.0.0.1:9878, 3@[::1]:9878 ,2@ctl-2.example:9878,")
	if err != nil {
		t.Fatal(err)
	}
	want := []Voter{{1, "10.0.0.1:9878"}, {3, "[::1]:9878"}, {2, "ctl-2.example:9878"}}
	if !slices.Equal(got, want) {
		t.Fatalf("ParsePeers = %v, want %v", got, want)
	}
	if s := FormatPeers(got); s != "1@10.0.0.1:9878,3@[::1]:9878,2@ctl-2.example:9878" {
		t.Fatalf("FormatPeers = %q", s)
	}
	if again, err := ParsePeers(FormatPeers(got)); err != nil || !slices.Equal(again, got) {
		t.Fatalf("round trip: %v, %v", again, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"", "none given"},
		{" , ", "none given"},
		{"10.0.0.1:9878", "want id@host:port"},
		{"x@10.0.0.1:9878", "whole number"},
		{"0@10.0.0.1:9878", "whole number"},
		{"-1@10.0.0.1:9878", "whole number"},
		{"1@10.0.0.1", "not host:port"},
		{"1@:9878", "not host:port"},
		{"1@10.0.0.1:0", "not 1-65535"},
		{"1@10.0.0.1:70000", "not 1-65535"},
		{"1@0.0.0.0:9878", "not an address other voters can dial"},
		{"1@[::]:9878", "not an address other voters can dial"},
		{"1@a:1,1@b:1", "listed twice"},
		{"1@a:1,2@a:1", "share the address"},
		{"1@a:1,2@a:2,3@a:3,4@a:4,5@a:5,6@a:6,7@a:7,8@a:8,9@a:9,10@a:10", "more than 9"},
	} {
		_, err := ParsePeers(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePeers(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}
