package interop

// The official 5.x Go client's SimpleConsumer on a slave's gRPC endpoint:
// the slave forwards receives, acks and changes of invisible time to its
// master (the pop state is the master's), and answers HA_NOT_AVAILABLE once
// the master is gone.

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
)

// TestGRPCSimpleConsumerOnASlave: a group master + slave (async
// replication), the slave with a gRPC endpoint. A 4.x producer sends 20
// messages to the master; a 5.x simple consumer on the slave's endpoint
// receives and acknowledges all of them (one after a change of invisible
// time), and the master's pop state says so: the group's committed offsets
// on the master cover the 20 messages. Then the master is killed: a receive
// on the slave fails with HA_NOT_AVAILABLE (50002), not an internal error.
func TestGRPCSimpleConsumerOnASlave(t *testing.T) {
	c := startHACluster(t, "async", "broker-a")
	c.waitInSync("broker-a")
	master, slave := c.brokers["broker-a"][0], c.brokers["broker-a"][1]

	grpcAddr := c.restartWithGRPC(slave)
	topic := c.topicOnSlave(slave)

	prod := c.startProducer(t, primitive.NewPassthroughResolver(c.nsList))
	const n = 20
	for i := range n {
		res, err := prod.SendSync(context.Background(), primitive.NewMessage(topic, []byte("m"+strconv.Itoa(i))))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %v", i, res, err)
		}
	}

	group := uniqueName(t, "cg")
	rmq5Config(&petrel{}, group) // the client's log settings
	sc, err := rmq.NewSimpleConsumer(&rmq.Config{Endpoint: grpcAddr, ConsumerGroup: group, Credentials: &credentials.SessionCredentials{}},
		rmq.WithAwaitDuration(receiveAwait), rmq.WithSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}))
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Start(); err != nil {
		t.Fatalf("start the simple consumer on the slave: %v", err)
	}
	c.afterStop(func() { _ = sc.GracefulStop() })

	seen := map[string]bool{}
	changed := false
	deadline := time.Now().Add(simpleTimeout)
	for len(seen) < n && time.Now().Before(deadline) {
		mvs, err := sc.Receive(context.Background(), 16, 20*time.Second)
		if err != nil {
			var st *rmq.ErrRpcStatus
			if errors.As(err, &st) && st.GetCode() == 40401 { // MESSAGE_NOT_FOUND
				continue
			}
			t.Fatalf("receive on the slave: %v", err)
		}
		for _, mv := range mvs {
			if !changed {
				// Put the first one back at once: it comes again.
				if err := sc.ChangeInvisibleDuration(mv, time.Second); err != nil {
					t.Fatalf("change invisible duration on the slave: %v", err)
				}
				changed = true
				continue
			}
			if err := sc.Ack(context.Background(), mv); err != nil {
				t.Fatalf("ack on the slave: %v", err)
			}
			seen[string(mv.GetBody())] = true
		}
	}
	if len(seen) != n {
		t.Fatalf("received and acknowledged %d distinct messages through the slave, want %d", len(seen), n)
	}
	// The master's pop state moved the group's offsets past all of them.
	waitFor(t, 30*time.Second, "the master's committed offsets of the group to cover the messages", func() (bool, string) {
		var sum int64
		for q := range 2 {
			resp, err := rawCall(c.addr[master], 14, map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q)}, 5*time.Second)
			if err != nil {
				return false, err.Error()
			}
			off, _ := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
			sum += off
		}
		return sum == n, fmt.Sprintf("offsets sum to %d", sum)
	})

	if err := master.signal(syscall.SIGKILL, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "a receive on the slave to answer HA_NOT_AVAILABLE", func() (bool, string) {
		_, err := sc.Receive(context.Background(), 16, 20*time.Second)
		var st *rmq.ErrRpcStatus
		if errors.As(err, &st) && st.GetCode() == 50002 && strings.Contains(st.GetMessage(), "master") {
			return true, ""
		}
		return false, fmt.Sprint(err)
	})
}

// restartWithGRPC stops slave gracefully and starts it again with a gRPC
// endpoint on a free port, which it returns, once it is in sync again.
func (c *haCluster) restartWithGRPC(slave *proc) string {
	c.t.Helper()
	if err := slave.signal(syscall.SIGTERM, 30*time.Second); err != nil {
		c.t.Fatal(err)
	}
	grpcAddr := fmt.Sprintf("127.0.0.1:%d", freePort(c.t))
	for i, a := range slave.args {
		if a == "--grpc-listen" {
			slave.args[i+1] = grpcAddr
		}
	}
	slave.listen = append(slave.listen, grpcAddr)
	slave.start()
	c.waitInSync("broker-a")
	return grpcAddr
}

// topicOnSlave creates a topic of 2 queues with the CLI and returns it once
// slave knows it (from its master's state stream).
func (c *haCluster) topicOnSlave(slave *proc) string {
	c.t.Helper()
	topic := uniqueName(c.t, "t")
	if out, err := exec.Command(petrelBin, "topic", "create", topic, "--queues", "2", "--namesrv", strings.Join(c.nsList, ";")).CombinedOutput(); err != nil {
		c.t.Fatalf("petrel topic create: %v\n%s", err, out)
	}
	waitFor(c.t, 30*time.Second, "the slave to know topic "+topic+" (from its master's state stream)", func() (bool, string) {
		resp, err := rawCall(c.addr[slave], 21, nil, 5*time.Second)
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(string(resp.Body), `"`+topic+`"`), "not in its topic table yet"
	})
	return topic
}
