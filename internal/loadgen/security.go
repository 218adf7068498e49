package loadgen

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/tlsx"
)

// Security is the credentials and TLS of a run (petrel bench's
// --access-key, --secret-key, --tls, --tls-ca, --tls-insecure), for
// servers run with --auth or --tls-mode.
type Security struct {
	// AccessKey and SecretKey, when set, sign every request: remoting ones
	// with AccessKey and Signature (authwire.Signer), gRPC calls with the
	// authorization and x-mq-date-time metadata of the 5.x clients,
	// computed per call. Both or neither.
	AccessKey, SecretKey string
	// TLS, when set, dials the name servers and brokers over TLS with it;
	// for a gRPC run it replaces the default config, which encrypts but
	// accepts any certificate.
	TLS *tls.Config
}

func (s Security) check() error {
	if (s.AccessKey == "") != (s.SecretKey == "") {
		return fmt.Errorf("%w: give both an access key and a secret key, or neither", ErrConfig)
	}
	return nil
}

// clientOptions adds the signer and the TLS network to o.
func (s Security) clientOptions(o remoting.ClientOptions) remoting.ClientOptions {
	if s.TLS != nil {
		o.Network = tlsx.DialNetwork(o.Network, s.TLS)
	}
	if s.AccessKey != "" {
		o.Sign = authwire.Signer(s.AccessKey, s.SecretKey)
	}
	return o
}

// grpcSigner puts the 5.x clients' authorization metadata on every call:
// x-mq-date-time of the call's start and its HMAC by the secret.
type grpcSigner struct {
	accessKey, secretKey string
	now                  func() time.Time
}

var _ credentials.PerRPCCredentials = grpcSigner{}

func (g grpcSigner) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	dt := auth.GRPCDateTime(g.now())
	return map[string]string{
		"x-mq-date-time": dt,
		"authorization":  auth.GRPCAuthorization(g.accessKey, g.secretKey, dt),
	}, nil
}

// RequireTransportSecurity is false: a plaintext front (--grpc-plaintext)
// checks signatures too.
func (grpcSigner) RequireTransportSecurity() bool { return false }
