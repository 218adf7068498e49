package workload

import (
	"fmt"
	"testing"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

func TestBodyRoundTrip(t *testing.T) {
	id := ID("0badc0de", "ordered", 1, 17)
	if id != "0badc0de-ordered-1-17" || !ValidID(id) {
		t.Fatalf("ID = %q (valid %v)", id, ValidID(id))
	}
	b := Body(id, 256, Field{"key", "k3"}, Field{"seq", "17"})
	if len(b) != 256 {
		t.Fatalf("body is %d bytes, want 256", len(b))
	}
	p, ok := ParseBody(b)
	if !ok || p.ID != id || p.Fields["key"] != "k3" || p.Fields["seq"] != "17" {
		t.Fatalf("ParseBody = %+v, %v", p, ok)
	}
	if short := Body(id, 0); string(short) != id {
		t.Fatalf("a body of size 0 is %q, want the id alone", short)
	}
	if p, ok := ParseBody([]byte(id)); !ok || p.ID != id {
		t.Fatalf("a bare id parses to %+v, %v", p, ok)
	}
	m := &message.Message{Body: b}
	m.SetProperty(message.PropertyKeys, id)
	if r := Receive(m); r.Corrupt || r.ID != id || r.Sum != Sum(b) || r.Seq() != 17 {
		t.Fatalf("Receive = %+v", r)
	}
}

func TestCorruptBodies(t *testing.T) {
	id := ID("0badc0de", "queue", 0, 3)
	for _, body := range []string{"", "garbage", "0badc0de-queue-0 x", "0badc0de-queue-0-3x seq=1", id + " seq=1 junk xxxx", id + " =1", id + " xxxx seq=1"} {
		if _, ok := ParseBody([]byte(body)); ok {
			t.Errorf("ParseBody(%q) accepted", body)
		}
		m := &message.Message{Body: []byte(body)}
		m.SetProperty(message.PropertyKeys, id+" other")
		if r := Receive(m); !r.Corrupt || r.ID != id || r.Sum != Sum([]byte(body)) {
			t.Errorf("Receive(%q) = %+v, want corrupt with the id from KEYS", body, r)
		}
	}
}

func TestAllocateAveragely(t *testing.T) {
	qs := make([]rmq.MessageQueue, 5)
	for i := range qs {
		qs[i] = rmq.MessageQueue{Topic: "t", BrokerName: "b", QueueID: int32(i)}
	}
	ids := func(qs []rmq.MessageQueue) string {
		s := ""
		for _, q := range qs {
			s += fmt.Sprint(q.QueueID)
		}
		return s
	}
	members := []string{"c", "a", "b"}
	got := ids(Allocate(qs, members, "a")) + "|" + ids(Allocate(qs, members, "b")) + "|" + ids(Allocate(qs, members, "c"))
	if got != "01|23|4" {
		t.Fatalf("5 queues among 3 = %s, want 01|23|4", got)
	}
	if got := ids(Allocate(qs[:2], members, "c")); got != "" {
		t.Fatalf("the third of 3 members over 2 queues got %q, want none", got)
	}
	if got := Allocate(qs, members, "z"); got != nil {
		t.Fatalf("a non-member got %v", got)
	}
}

func TestRegistryNames(t *testing.T) {
	names := Names()
	if len(names) < 3 || names[0] != "queue" || names[1] != "broadcast" || names[2] != "ordered" {
		t.Fatalf("Names() = %v, want queue, broadcast, ordered first", names)
	}
	for _, n := range names {
		w, err := New(n)
		if err != nil || w.Name() != n {
			t.Fatalf("New(%q) = %v, %v", n, w, err)
		}
	}
	if _, err := New("nope"); err == nil {
		t.Fatal("New of an unknown name succeeded")
	}
}
