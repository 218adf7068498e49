package daemontest

import (
	"testing"

	"github.com/petrelmq/petrel/internal/tlsx/tlsxtest"
)

// TLSFiles are PEM files of a test CA, a server certificate it signed
// (for 127.0.0.1, ::1 and localhost; also usable as a client certificate,
// as Petrel's own links present theirs) and a client certificate it
// signed. Keys are written with mode 0600.
type TLSFiles struct {
	CA                    string
	Cert, Key             string
	ClientCert, ClientKey string
}

// WriteTLSFiles makes a fresh CA and its certificates (tlsxtest's) in a
// temporary directory of t. Each call makes a new CA and new keys, so a
// second call's server certificate differs from the first's.
func WriteTLSFiles(t testing.TB) TLSFiles {
	t.Helper()
	dir := t.TempDir()
	f, ca := tlsxtest.Files(t, dir)
	cert, key := tlsxtest.ClientPair(t, dir)
	return TLSFiles{CA: ca, Cert: f.Cert, Key: f.Key, ClientCert: cert, ClientKey: key}
}
