package vfs

import (
	"testing"
)

func TestMkdirAllDurableSyncsEachCreatedParentOutermostFirst(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/a"); err != nil {
		t.Fatal(err)
	}
	var synced []string
	m.InjectError(func(op Op, p string) error {
		if op == OpSyncDir {
			synced = append(synced, p)
		}
		return nil
	})
	if err := MkdirAllDurable(m, "/a/b/c"); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 2 || synced[0] != "/a" || synced[1] != "/a/b" {
		t.Fatalf("synced %v, want [/a /a/b]", synced)
	}
	if st, err := m.Stat("/a/b/c"); err != nil || !st.IsDir() {
		t.Fatalf("dir not created: %v", err)
	}
	synced = nil
	if err := MkdirAllDurable(m, "/a/b/c"); err != nil || len(synced) != 0 {
		t.Fatalf("existing dir: synced %v, err %v", synced, err)
	}
}
