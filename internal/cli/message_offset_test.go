package cli

import (
	"errors"
	"strings"
	"testing"
)

func TestMessageGetAtReadsTheMessageAtAnOffset(t *testing.T) {
	c := startCluster(t)
	c.must(OutputTable, func(cl *CLI) error {
		return cl.TopicCreate(bg, TopicSpec{Name: "Ledger", ReadQueues: 1, WriteQueues: 1})
	})
	for _, body := range []string{"zero", "one", "two"} {
		c.must(OutputTable, func(cl *CLI) error { return cl.Send(bg, SendSpec{Topic: "Ledger", Body: []byte(body)}) })
	}
	c.dispatched()
	var m Message
	c.mustJSON(&m, func(cl *CLI) error { return cl.MessageGetAt(bg, "Ledger", 0, 1, "") })
	if string(m.Body) != "one" || m.QueueOffset != 1 {
		t.Fatalf("message at offset 1: %+v; want body one", m)
	}
	out := c.must(OutputTable, func(cl *CLI) error { return cl.MessageGetAt(bg, "Ledger", 0, 2, "") })
	if !strings.Contains(out, "Queue offset: 2") || !strings.Contains(out, "two") {
		t.Fatalf("message get at offset 2:\n%s", out)
	}
	_, err := c.run(OutputTable, func(cl *CLI) error { return cl.MessageGetAt(bg, "Ledger", 0, 3, "") })
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "min 0, max 3") {
		t.Fatalf("offset past the end: %v; want not found naming min 0, max 3", err)
	}
}
