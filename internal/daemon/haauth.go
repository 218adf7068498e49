package daemon

// Authentication of the replication port (--ha-listen): with --auth a
// master serves only slaves that open their connection with a super
// user's signed credentials (the cluster's --auth-init-user), which a
// slave sends whenever it has an init user.

import (
	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/ha"
)

// protoHA is the replication port's protocol in refusals and metrics.
const protoHA = "ha"

// haAuthenticate is ha.MasterConfig.Authenticate: the Auth frame's
// signature checked against the process's users, and a super user
// required. Nil without --auth.
func (s Security) haAuthenticate() func(accessKey string, content, sig []byte) error {
	if s.Auth == nil {
		return nil
	}
	c := s.Auth.checker
	return func(accessKey string, content, sig []byte) error {
		u, r := c.AuthenticateHMAC(protoHA, accessKey, content, sig)
		if r != nil {
			return r
		}
		if r := c.RequireSuper(auth.Where{}, protoHA, u, "replicate this broker's log"); r != nil {
			return r
		}
		return nil
	}
}

// haCredentials is ha.SlaveConfig.Credentials: the init user (none
// without --auth-init-user).
func (s Security) haCredentials() ha.Credentials {
	return ha.Credentials{AccessKey: s.AccessKey, SecretKey: s.SecretKey}
}

// HAAddr is the replication address this broker serves as a master (the
// advertised host, the port of --ha-listen); "" when it serves none.
func (d *Broker) HAAddr() string { return d.haAdvertise(d.advertise) }
