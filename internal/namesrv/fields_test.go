package namesrv

import (
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// TestRequestsWithABadFieldAreRefusedByName: a request missing a required
// field, or with a malformed number, is refused with a remark naming it
// and changes nothing.
func TestRequestsWithABadFieldAreRefusedByName(t *testing.T) {
	ns := startNS(t, clock.NewManual(t0), "")
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	id := map[string]string{"brokerName": "b", "brokerAddr": "127.0.0.1:1", "clusterName": "c", "brokerId": "x"}
	for _, c := range []struct {
		code  int16
		ext   map[string]string
		body  []byte
		field string
	}{
		{rmq.CodeGetRouteInfoByTopic, nil, nil, "topic is missing"},
		{rmq.CodeDeleteTopicInNamesrv, nil, nil, "topic is missing"},
		{rmq.CodePutKVConfig, map[string]string{"namespace": "ns", "value": "v"}, nil, "key is missing"},
		{rmq.CodeGetKVConfig, map[string]string{"key": "k"}, nil, "namespace is missing"},
		{rmq.CodeDeleteKVConfig, map[string]string{"namespace": "ns"}, nil, "key is missing"},
		{rmq.CodeGetKVListByNamespace, nil, nil, "namespace is missing"},
		{rmq.CodeUnregisterBroker, id, nil, `brokerId is "x"`},
		{rmq.CodeQueryDataVersion, id, []byte(`{}`), `brokerId is "x"`},
		{rmq.CodeRegisterBroker, id, []byte(`{}`), `brokerId is "x"`},
	} {
		r := invoke(t, cl, ns.addr, c.code, c.ext, c.body)
		if r.Code != remoting.CodeSystemError || !strings.Contains(r.Remark, c.field) {
			t.Errorf("%d %v: %d %q, want a remark with %q", c.code, c.ext, r.Code, r.Remark, c.field)
		}
	}
	if r := invoke(t, cl, ns.addr, rmq.CodeGetKVListByNamespace, map[string]string{"namespace": "ns"}, nil); r.Code != rmq.RespQueryNotFound {
		t.Fatalf("a refused put stored something: %d %q %s", r.Code, r.Remark, r.Body)
	}
}
