package broker

import (
	"context"
	"testing"

	"github.com/petrelmq/petrel/internal/store"
)

// TestPermissionWithoutWriteRefusesSendsUntilRestored: a drained broker
// (brokerPermission 4) refuses sends with NO_PERMISSION and a remedy;
// pulls go on; restoring 6 takes sends again.
func TestPermissionWithoutWriteRefusesSendsUntilRestored(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.subscribe(1, "c1", "g", "T", "*")
	e.send("T", 0, "before")
	if p := e.b.Permission(); p != PermRead|PermWrite {
		t.Fatalf("permission at start %d, want 6", p)
	}
	if changed, err := e.b.SetPermission(PermRead); !changed || err != nil {
		t.Fatalf("set 4: changed %v, %v", changed, err)
	}
	_, err := e.b.Send(context.Background(), sendReq("T", 0, "during"))
	wantKind(t, err, KindNoPermission, "write permission is off", "brokerPermission=6")
	if got := e.mustPull(pullReq("g", "T", 0, 0)); len(got.bodies) != 1 {
		t.Fatalf("pull while drained: %d messages, want the 1 stored before", len(got.bodies))
	}
	if changed, _ := e.b.SetPermission(PermRead); changed {
		t.Fatal("setting the same permission reported a change")
	}
	if _, err := e.b.SetPermission(PermRead | PermWrite | PermInherit); err == nil {
		t.Fatal("the inherit bit was taken as a broker permission")
	}
	if _, err := e.b.SetPermission(PermRead | PermWrite); err != nil {
		t.Fatal(err)
	}
	e.send("T", 0, "after")
}

// TestAutoCreateTopicsAtRunTime: off, a send to an unknown topic is
// refused; on again, it creates the topic, and turning it on on a broker
// started without it creates the template topic first.
func TestAutoCreateTopicsAtRunTime(t *testing.T) {
	e := newEnv(t, func(_ *store.Config, c *Config) { c.AutoCreateTopics = false })
	if _, ok := e.b.meta.Topic(TemplateTopic); ok {
		t.Fatal("template topic exists on a broker started without auto-creation")
	}
	_, err := e.b.Send(context.Background(), sendReq("Fresh", 0, "x"))
	wantKind(t, err, KindTopicNotExist, "auto-creation is off")
	if err := e.b.SetAutoCreateTopics(true); err != nil {
		t.Fatal(err)
	}
	if !e.b.AutoCreateTopics() {
		t.Fatal("AutoCreateTopics still off")
	}
	if _, ok := e.b.meta.Topic(TemplateTopic); !ok {
		t.Fatal("turning auto-creation on did not create the template topic")
	}
	e.send("Fresh", 0, "x")
	if err := e.b.SetAutoCreateTopics(false); err != nil {
		t.Fatal(err)
	}
	_, err = e.b.Send(context.Background(), sendReq("Fresh2", 0, "x"))
	wantKind(t, err, KindTopicNotExist, "auto-creation is off")
}
