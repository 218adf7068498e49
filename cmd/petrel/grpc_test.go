package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/tlsx"
	"github.com/petrelmq/petrel/internal/tlsx/tlsxtest"
)

func TestServerPrintsTheGRPCListener(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(dir)
	o.grpc = grpcOptions{listen: "127.0.0.1:0"}
	_, out := startTestServer(t, o)
	want := "gRPC (RocketMQ 5.x) listening on 127.0.0.1:"
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "self-signed certificate "+dir) {
		t.Fatalf("startup output lacks %q and the certificate path:\n%s", want, out.String())
	}
}

func TestGRPCFlags(t *testing.T) {
	for _, c := range []struct {
		o      grpcOptions
		listen string
		bad    string
	}{
		{grpcOptions{listen: ":8081"}, ":8081", ""},
		{grpcOptions{listen: "off"}, "", ""},
		{grpcOptions{listen: ""}, "", ""},
		{grpcOptions{listen: "OFF", plaintext: true}, "", "turns off"},
		{grpcOptions{listen: ":1", tlsCert: "a.crt"}, "", "both"},
		{grpcOptions{listen: ":1", tlsCert: "a", tlsKey: "b", plaintext: true}, "", "exclude"},
		{grpcOptions{listen: ":1", plaintext: true}, ":1", ""},
	} {
		var cfg daemon.BrokerConfig
		err := c.o.apply(&cfg, nil)
		switch {
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("%+v: %v, want an error saying %q", c.o, err, c.bad)
		case c.bad == "" && (err != nil || cfg.GRPCListen != c.listen || cfg.GRPC.Plaintext != c.o.plaintext):
			t.Errorf("%+v: %v, listen %q plaintext %v", c.o, err, cfg.GRPCListen, cfg.GRPC.Plaintext)
		}
	}
}

func TestGRPCConfigFileKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "petrel.yaml")
	if err := os.WriteFile(path, []byte("grpc-listen: off\ngrpc-plaintext: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := newBrokerCmd()
	// loadConfig sets the command's flags (bound to its own options) from
	// the file; read them back.
	if err := loadConfig(cmd, &options{config: path}); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"grpc-listen": "off", "grpc-plaintext": "true"} {
		if got := cmd.Flags().Lookup(k).Value.String(); got != want {
			t.Errorf("%s = %q from the config file, want %q", k, got, want)
		}
	}
}

// With a TLS mode (the process's tlsx.Server) the shared certificate is
// left to the daemon, which serves it reloadably, instead of being loaded
// once from its files; the startup line still names it.
func TestGRPCSharedCertificateWithATLSModeIsTheDaemons(t *testing.T) {
	files, _ := tlsxtest.Files(t, t.TempDir())
	srv, err := tlsx.NewServer(files)
	if err != nil {
		t.Fatal(err)
	}
	sec := &securityOptions{tlsMode: "permissive", tlsCert: files.Cert, tlsKey: files.Key}
	o := grpcOptions{listen: ":8081"}
	cfg := daemon.BrokerConfig{Security: daemon.Security{TLS: srv, TLSMode: tlsx.Permissive}}
	if err := o.apply(&cfg, sec); err != nil {
		t.Fatal(err)
	}
	if cfg.GRPC.TLSCert != "" || cfg.GRPC.TLSKey != "" || cfg.GRPC.Plaintext {
		t.Fatalf("gRPC certificate files %q / %q, plaintext %v; want none (the daemon serves the process's)", cfg.GRPC.TLSCert, cfg.GRPC.TLSKey, cfg.GRPC.Plaintext)
	}
	if got, want := o.describe("/data"), "TLS, certificate "+files.Cert+" (--tls-cert)"; got != want {
		t.Fatalf("describe %q, want %q", got, want)
	}
}
