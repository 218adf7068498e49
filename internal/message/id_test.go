package message

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestOffsetID(t *testing.T) {
	cases := []struct {
		host   netip.AddrPort
		offset int64
		want   string
	}{
		// 127.0.0.1, port 10911 = 0x2A9F, offset 0.
		{netip.MustParseAddrPort("127.0.0.1:10911"), 0, "7F00000100002A9F0000000000000000"},
		{netip.MustParseAddrPort("192.168.0.10:65535"), 0x0123456789ABCDEF, "C0A8000A0000FFFF0123456789ABCDEF"},
		{netip.MustParseAddrPort("[2001:db8::ff]:10911"), 1 << 40,
			"20010DB80000000000000000000000FF00002A9F0000010000000000"},
		// An IPv4-mapped store host is written in the IPv4 form, as in records.
		{netip.MustParseAddrPort("[::ffff:127.0.0.1]:10911"), 0, "7F00000100002A9F0000000000000000"},
	}
	for _, tc := range cases {
		id := OffsetID(tc.host, tc.offset)
		if id != tc.want {
			t.Errorf("OffsetID(%v, %d) = %s, want %s", tc.host, tc.offset, id, tc.want)
		}
		host, off, err := ParseOffsetID(id)
		if err != nil {
			t.Fatalf("ParseOffsetID(%s): %v", id, err)
		}
		if want := netip.AddrPortFrom(tc.host.Addr().Unmap(), tc.host.Port()); host != want || off != tc.offset {
			t.Errorf("ParseOffsetID(%s) = %v, %d; want %v, %d", id, host, off, want, tc.offset)
		}
		// Lower case is accepted too.
		if host2, off2, err := ParseOffsetID(strings.ToLower(id)); err != nil || host2 != host || off2 != off {
			t.Errorf("ParseOffsetID(lower %s) = %v, %d, %v", id, host2, off2, err)
		}
	}
}

func TestOffsetIDMatchesRecord(t *testing.T) {
	for name, b := range sampleRecords() {
		r := Record(b)
		id := OffsetID(r.StoreHost(), r.PhysicalOffset())
		wantLen := 32
		if r.SysFlag()&SysFlagStoreHostIPv6 != 0 {
			wantLen = 56
		}
		if len(id) != wantLen {
			t.Errorf("%s: offset id %s has %d characters, want %d", name, id, len(id), wantLen)
		}
		host, off, err := ParseOffsetID(id)
		if err != nil || host != r.StoreHost() || off != r.PhysicalOffset() {
			t.Errorf("%s: ParseOffsetID = %v, %d, %v", name, host, off, err)
		}
	}
}

func TestParseOffsetIDErrors(t *testing.T) {
	valid4 := "7F00000100002A9F0000000000000000"
	valid6 := "20010DB80000000000000000000000FF00002A9F0000010000000000"
	cases := []struct{ name, id string }{
		{"empty", ""},
		{"31 chars", valid4[:31]},
		{"33 chars", valid4 + "0"},
		{"55 chars", valid6[:55]},
		{"57 chars", valid6 + "0"},
		{"non-hex v4", "7F0000010000ZA9F0000000000000000"},
		{"non-hex v6", strings.Replace(valid6, "D", "G", 1)},
		{"v4 port > 65535", "7F00000100012A9F0000000000000000"},
		{"v4 port 0xFFFFFFFF", "7F000001FFFFFFFF0000000000000000"},
		{"v6 port > 65535", "20010DB80000000000000000000000FF00012A9F0000010000000000"},
		{"uniq key", "C000020250B00000000091bc0b600001"}, // a UNIQ_KEY parses to port > 65535
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host, off, err := ParseOffsetID(tc.id)
			if !errors.Is(err, ErrBadMessageID) {
				t.Fatalf("ParseOffsetID(%q) = %v, %d, %v; want ErrBadMessageID", tc.id, host, off, err)
			}
			if host.IsValid() || off != 0 {
				t.Fatalf("ParseOffsetID(%q) returned a value with its error: %v, %d", tc.id, host, off)
			}
		})
	}
}

func TestOffsetIDAllocs(t *testing.T) {
	host := netip.MustParseAddrPort("[2001:db8::ff]:10911")
	if n := testing.AllocsPerRun(100, func() { _ = OffsetID(host, 42) }); n > 1 {
		t.Errorf("OffsetID allocates %v times, want at most 1 (the string)", n)
	}
}
