package main

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// TestExampleConfigCoversEveryServerFlag keeps docs/petrel.example.yaml in
// step with `petrel server`: every flag is a key there (with a comment), and
// the file loads as a config whose values are the flags' defaults.
func TestExampleConfigCoversEveryServerFlag(t *testing.T) {
	const path = "../../docs/petrel.example.yaml"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kv map[string]any
	if err := yaml.Unmarshal(raw, &kv); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	cmd := newServerCmd()
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "config" || f.Name == "help" {
			return
		}
		if _, ok := kv[f.Name]; !ok {
			t.Errorf("%s lacks the key %q (flag --%s: %s)", path, f.Name, f.Name, f.Usage)
		}
	})
	o := &options{}
	cmd = newServerCmd()
	if err := cmd.Flags().Parse([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	o.config = path
	if err := loadConfig(cmd, o); err != nil {
		t.Fatalf("the example does not load: %v", err)
	}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed && f.Name != "config" && f.Value.String() != f.DefValue && !strings.Contains(f.Value.Type(), "Slice") {
			t.Errorf("key %q is %q in the example, but the flag's default is %q", f.Name, f.Value.String(), f.DefValue)
		}
	})
}
