package grpcfront

import (
	"net/netip"
	"testing"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
)

// TestConsumerMembersCarryLanguageVersionAndAddress: a simple consumer is
// registered with the broker with its client's language (RocketMQ's
// LanguageCode name), its version (the MQVersion ordinal RocketMQ
// reports: V5_1_2 is 437) and the address it connected from.
func TestConsumerMembersCarryLanguageVersionAndAddress(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	st := consumerSettings("g1", "T1", 0)
	st.UserAgent = &v2.UA{Language: v2.Language_GOLANG, Version: "5.1.2"}
	e.telemetry("c1", st)
	ms := e.b.ConsumerMembers("g1")
	if len(ms) != 1 {
		t.Fatalf("members %v, want one", ms)
	}
	m := ms[0]
	ap, err := netip.ParseAddrPort(m.ClientAddr)
	if m.Language != "GO" || m.Version != 437 || err != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 {
		t.Fatalf("member language %q version %d address %q; want GO, 437 and the client's 127.0.0.1 address", m.Language, m.Version, m.ClientAddr)
	}
}

func TestClientLanguageAndVersionCodes(t *testing.T) {
	for _, c := range []struct {
		lang v2.Language
		want string
	}{
		{v2.Language_JAVA, "JAVA"}, {v2.Language_GOLANG, "GO"}, {v2.Language_NODE_JS, "NODE_JS"},
		{v2.Language_DOT_NET, "DOTNET"}, {v2.Language_CPP, "CPP"}, {v2.Language_PYTHON, "PYTHON"},
		{v2.Language_RUST, "RUST"}, {v2.Language_PHP, "PHP"}, {v2.Language_RUBY, "RUBY"},
		{v2.Language_KOTLIN, "OTHER"}, {v2.Language_LANGUAGE_UNSPECIFIED, "OTHER"},
	} {
		if got := languageCode(c.lang); got != c.want {
			t.Errorf("language %v: %q, want %q", c.lang, got, c.want)
		}
	}
	for _, c := range []struct {
		v    string
		want int32
	}{
		{"5.0.0", 413}, {"5.1.2", 437}, {"5.0.7", 427}, {"5.9.9", 611}, {"5.0.1-rc1", 415},
		{"", 413}, {"garbage", 413}, {"5.10.0", 413}, {"4.9.4", 413},
	} {
		if got := clientVersion(c.v); got != c.want {
			t.Errorf("version %q: %d, want %d", c.v, got, c.want)
		}
	}
}

// FuzzClientVersion: any user-agent version maps to an MQVersion ordinal
// of a 5.x release (V5_0_0..V5_9_9) without panicking.
func FuzzClientVersion(f *testing.F) {
	for _, s := range []string{"5.1.2", "5.0.1-rc1", "", "5..", "5.9.9+meta", "-1.-1.-1", "5.00000000000000000001.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got := clientVersion(v); got < mqVersion500 || got > mqVersion500+198 || (got-mqVersion500)%2 != 0 {
			t.Fatalf("version %q: ordinal %d outside the 5.x releases", v, got)
		}
	})
}
