package namesrv

import (
	"fmt"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
)

func manyTopics(n int) map[string]TopicConfig {
	m := make(map[string]TopicConfig, n)
	for i := range n {
		name := fmt.Sprintf("orders-%06d", i)
		m[name] = TopicConfig{TopicName: name, ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	}
	return m
}

func frameBytes(t testing.TB, c *remoting.Command) int {
	t.Helper()
	b, err := remoting.EncodeFrame(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestHeartbeatFrameSizeWith100000Topics measures the REGISTER_BROKER frames
// of a broker with 100,000 topics: a heartbeat (empty delta), a delta with
// one changed topic, and the periodic full registration with and without
// compression. The heartbeat must stay tiny and the full frame under the
// 16 MiB frame limit.
func TestHeartbeatFrameSizeWith100000Topics(t *testing.T) {
	const n = 100_000
	topics := manyTopics(n)
	v := DataVersion{Timestamp: 1_700_000_000_000, Counter: 123456}
	broker := BrokerInfo{Cluster: "DefaultCluster", Name: "broker-a", Addr: "10.0.0.5:10911", HAServerAddr: "10.0.0.5:10912"}
	r := NewRegistrar(nil, nil, broker, RegistrarOptions{})
	raw := NewRegistrar(nil, nil, broker, RegistrarOptions{CompressAboveBytes: -1})

	heartbeat := frameBytes(t, r.deltaRequest(r.ident(), v, v, nil, nil))
	v2 := DataVersion{Timestamp: v.Timestamp, Counter: v.Counter + 1}
	changed := map[string]TopicConfig{"orders-000042": topics["orders-000042"]}
	oneChange := frameBytes(t, r.deltaRequest(r.ident(), v, v2, changed, nil))
	fullZ := frameBytes(t, r.fullRequest(r.ident(), topics, 1, v))
	fullJSON := frameBytes(t, raw.fullRequest(raw.ident(), topics, 1, v))
	t.Logf("REGISTER_BROKER frames for %d topics: heartbeat (empty delta) %d B; one changed topic %d B; "+
		"full JSON %d B (%.1f MiB); full zlib %d B (%.2f MiB); every 30 s with a full one every 10: %.0f B/heartbeat on average",
		n, heartbeat, oneChange, fullJSON, float64(fullJSON)/(1<<20), fullZ, float64(fullZ)/(1<<20),
		(9*float64(heartbeat)+float64(fullZ))/10)
	if heartbeat > 512 || oneChange > 768 {
		t.Fatalf("heartbeat %d B, one-change delta %d B", heartbeat, oneChange)
	}
	if fullZ >= remoting.DefaultMaxFrameBytes || fullZ*4 > fullJSON {
		t.Fatalf("compressed full registration %d B (JSON %d B)", fullZ, fullJSON)
	}
	// The compressed full body decodes to the same topics.
	req := r.fullRequest(r.ident(), topics, 1, v)
	got, err := decodeRegistration(req)
	if err != nil || len(got.Topics) != n || got.Version != v {
		t.Fatalf("decode: %v, %d topics, version %v", err, len(got.Topics), got.Version)
	}
}

func BenchmarkRegisterFrame100000Topics(b *testing.B) {
	topics := manyTopics(100_000)
	v := DataVersion{Timestamp: 1, Counter: 1}
	r := NewRegistrar(nil, nil, BrokerInfo{Cluster: "c", Name: "broker-a", Addr: "10.0.0.5:10911"}, RegistrarOptions{})
	b.Run("heartbeat", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.SetBytes(int64(frameBytes(b, r.deltaRequest(r.ident(), v, v, nil, nil))))
		}
	})
	b.Run("full-zlib", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.SetBytes(int64(frameBytes(b, r.fullRequest(r.ident(), topics, 1, v))))
		}
	})
	b.Run("apply-one-change", func(b *testing.B) {
		// What a topic create costs the registrar of a broker holding
		// 100,000 topics: O(1), whatever the table's size.
		r := NewRegistrar(nil, []string{"127.0.0.1:1"}, BrokerInfo{Cluster: "c", Name: "broker-a", Addr: "10.0.0.5:10911"}, RegistrarOptions{})
		r.Update(topics, v)
		c := TopicChange{Name: "orders-000042", Config: topics["orders-000042"], Version: v}
		b.ReportAllocs()
		for b.Loop() {
			c.Version.Counter++
			c.Config.ReadQueueNums = int32(c.Version.Counter%8) + 1
			r.Apply(c)
		}
	})
}
