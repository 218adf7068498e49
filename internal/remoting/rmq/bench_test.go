package rmq

import (
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
)

// pullExt is what the official Go client sends with a pull.
var pullExt = map[string]string{
	"consumerGroup": "please_rename_unique_group_name_4", "topic": "TopicTest", "queueId": "3", "queueOffset": "1234567",
	"maxMsgNums": "32", "sysFlag": "6", "commitOffset": "1234000", "suspendTimeoutMillis": "20000",
	"subscription": "*", "subVersion": "1733046000000", "expressionType": "TAG", "bname": "broker-a",
}

var sinkPull PullRequest

// TestDecodePullRequestDoesNotAllocate: the pull header is on the hot path
// of consumption; reading it costs no allocation (the handler's reading of
// ExtFields before the typed codec did not either).
func TestDecodePullRequestDoesNotAllocate(t *testing.T) {
	req := remoting.NewRequest(CodePullMessage, pullExt, nil)
	if n := testing.AllocsPerRun(100, func() {
		var err error
		if sinkPull, err = DecodePullRequest(req); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("DecodePullRequest allocates %v times", n)
	}
}

func BenchmarkDecodePullRequest(b *testing.B) {
	req := remoting.NewRequest(CodePullMessage, pullExt, nil)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if sinkPull, err = DecodePullRequest(req); err != nil {
			b.Fatal(err)
		}
	}
}
