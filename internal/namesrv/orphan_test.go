package namesrv

import (
	"reflect"
	"testing"
	"time"
)

// TestSlaveKeepsItsGroupRoutedWhileTheMasterIsGone: when a master
// unregisters, expires or loses its connection while its slave is live, the
// route keeps the broker name's queues with brokerAddrs {1: slave} only (so
// consumers read them from the slave and producers, which need id 0, send
// elsewhere); the master's return brings back its own topic set, and the
// broker name leaves routes once its last process is gone.
func TestSlaveKeepsItsGroupRoutedWhileTheMasterIsGone(t *testing.T) {
	ways := map[string]func(tb *Table){
		"unregister": func(tb *Table) { tb.Unregister("c", "a", 0, "10.0.0.1:10911") },
		"expire": func(tb *Table) {
			tb.Touch(BrokerID{Cluster: "c", Name: "a", ID: 1}, "10.0.0.3:10911", DataVersion{Timestamp: 1, Counter: 1}, t0.Add(100*time.Second))
			tb.Touch(BrokerID{Cluster: "c", Name: "b", ID: 0}, "10.0.0.2:10911", DataVersion{Timestamp: 1, Counter: 1}, t0.Add(100*time.Second))
			if gone := tb.Expire(t0.Add(130*time.Second), 120*time.Second); !reflect.DeepEqual(gone, []string{"10.0.0.1:10911"}) {
				t.Fatalf("expired %v, want the master only", gone)
			}
		},
		"connection closed": func(tb *Table) {
			if gone := tb.DropSession(7); !reflect.DeepEqual(gone, []string{"10.0.0.1:10911"}) {
				t.Fatalf("dropped %v, want the master only", gone)
			}
		},
	}
	for name, masterGoes := range ways {
		t.Run(name, func(t *testing.T) {
			tb := NewTable()
			m := full("c", "a", 0, "10.0.0.1:10911", 1, topic("T", 4, 6), topic("Old", 2, 6))
			m.Session = 7
			tb.Register(m, t0)
			tb.Register(full("c", "a", 1, "10.0.0.3:10911", 1), t0)
			tb.Register(full("c", "b", 0, "10.0.0.2:10911", 1, topic("T", 8, 6)), t0)

			masterGoes(tb)
			rd := mustRoute(t, tb, "T")
			want := RouteData{
				BrokerDatas: []BrokerData{
					{BrokerName: "a", Cluster: "c", BrokerAddrs: map[int64]string{1: "10.0.0.3:10911"}},
					{BrokerName: "b", Cluster: "c", BrokerAddrs: map[int64]string{0: "10.0.0.2:10911"}},
				},
				FilterServerTable: map[string][]string{},
				QueueDatas: []QueueData{
					{BrokerName: "a", Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4},
					{BrokerName: "b", Perm: 6, ReadQueueNums: 8, WriteQueueNums: 8},
				},
			}
			if !reflect.DeepEqual(rd, want) {
				t.Fatalf("route with a's master gone\n got %+v\nwant %+v", rd, want)
			}
			if _, ok := tb.Route("Old"); !ok {
				t.Fatal("topic Old of a's last master has no route while a's slave is live")
			}
			if got := tb.Topics(); !reflect.DeepEqual(got, []string{"Old", "T"}) {
				t.Fatalf("topics %v", got)
			}

			// The master returns without topic Old: its own set replaces
			// the kept one.
			tb.Register(full("c", "a", 0, "10.0.0.1:10911", 2, topic("T", 4, 6)), t0.Add(140*time.Second))
			if _, ok := tb.Route("Old"); ok {
				t.Fatal("topic Old, dropped by the returning master, is still routed")
			}
			rd = mustRoute(t, tb, "T")
			if addrs := rd.BrokerDatas[0].BrokerAddrs; len(addrs) != 2 || addrs[0] != "10.0.0.1:10911" {
				t.Fatalf("a's brokerAddrs after the master returned: %v", addrs)
			}

			// Master gone again, then the slave: a leaves routes.
			tb.Unregister("c", "a", 0, "")
			tb.Unregister("c", "a", 1, "")
			rd = mustRoute(t, tb, "T")
			if len(rd.QueueDatas) != 1 || rd.QueueDatas[0].BrokerName != "b" || len(rd.BrokerDatas) != 1 {
				t.Fatalf("route after a's last process left: %+v", rd)
			}
			if _, ok := tb.ClusterInfo().BrokerAddrTable["a"]; ok {
				t.Fatal("cluster info still lists a")
			}
		})
	}
}

// TestDeleteTopicWhileOnlyASlaveIsLive: deleting a topic also drops it
// from the set kept for a broker name whose master is gone.
func TestDeleteTopicWhileOnlyASlaveIsLive(t *testing.T) {
	tb := NewTable()
	tb.Register(full("c", "a", 0, "10.0.0.1:10911", 1, topic("T", 4, 6)), t0)
	tb.Register(full("c", "a", 1, "10.0.0.3:10911", 1), t0)
	tb.Unregister("c", "a", 0, "")
	tb.DeleteTopic("T")
	if _, ok := tb.Route("T"); ok {
		t.Fatal("deleted topic still routed")
	}
	tb.Unregister("c", "a", 1, "")
	if len(tb.topicIndex) != 0 || len(tb.orphans) != 0 {
		t.Fatalf("leftovers: index %v, kept %v", tb.topicIndex, tb.orphans)
	}
}
