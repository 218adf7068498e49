package verify

// `petrel verify --auth --tls`: the run's users, secrets and certificates,
// and the setup of the workloads' user on every master.
//
// With --auth every process starts with --auth and the init user
// verify-admin (a super user, with a secret made for the run); verify then
// creates, on every master, the normal user verify-client and an ACL that
// allows it exactly what the workloads do on the run's topics and groups,
// checks that the broker refuses an unsigned request and one the ACL does
// not allow, and drives every workload as verify-client: authentication
// and authorization run on every request of the run. Only the setup
// (topic creation) signs as verify-admin.
//
// With --tls verify makes a CA and a server certificate in the run's
// directory, starts every process with --tls-mode enforcing and that
// certificate, and its clients verify the processes against the CA. The
// fault proxies forward bytes, so TLS passes them, and their faults cut
// TLS connections as they cut plaintext ones.

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/tlsx"
	"github.com/petrelmq/petrel/internal/verify/cluster"
	"github.com/petrelmq/petrel/internal/verify/history"
	"github.com/petrelmq/petrel/internal/verify/workload"
)

// The users of a run with --auth.
const (
	// AdminUser is every process's --auth-init-user: the super user the
	// processes sign their own requests with, and verify its setup.
	AdminUser = "verify-admin"
	// ClientUser is the normal user every workload client signs as.
	ClientUser = "verify-client"
)

// authSetupTimeout bounds the user and ACL setup on every master.
const authSetupTimeout = 30 * time.Second

// security is a run's users and certificates (zero: neither --auth nor
// --tls).
type security struct {
	admin, client *workload.Credentials // nil without --auth
	certs         *cluster.CertFiles    // nil without --tls
	tls           *tls.Config           // the clients' side of certs
	// signer makes the Sign of a remoting client (authwire.Signer;
	// tests put in their own).
	signer func(accessKey, secretKey string) func(*remoting.Command)
}

// sign is the Sign hook of a client signing as c.
func (s *security) sign(c *workload.Credentials) func(*remoting.Command) {
	return s.signer(c.AccessKey, c.SecretKey)
}

// newSecurity makes the run's secrets and, with TLS, its certificates
// (under dir/tls).
func newSecurity(cfg Config) (*security, error) {
	s := &security{signer: authwire.Signer}
	if cfg.Auth {
		s.admin = &workload.Credentials{AccessKey: AdminUser, SecretKey: rand.Text()}
		s.client = &workload.Credentials{AccessKey: ClientUser, SecretKey: rand.Text()}
	}
	if cfg.TLS {
		certs, err := cluster.GenerateCerts(filepath.Join(cfg.Dir, "tls"))
		if err != nil {
			return nil, setupErr("TLS: %v", err)
		}
		pool, err := certs.CertPool()
		if err != nil {
			return nil, setupErr("TLS: %v", err)
		}
		s.certs = &certs
		s.tls = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return s, nil
}

// cluster is the cluster.Security of the processes.
func (s *security) cluster() cluster.Security {
	var c cluster.Security
	if s == nil {
		return c
	}
	if s.admin != nil {
		c.AdminUser, c.AdminSecret = s.admin.AccessKey, s.admin.SecretKey
	}
	c.TLS = s.certs
	return c
}

// apply sets the workloads' credentials and TLS in env.
func (s *security) apply(env *workload.Env) {
	if s == nil {
		return
	}
	env.Credentials, env.Admin, env.TLS = s.client, s.admin, s.tls
}

// network is the real network, in TLS with --tls.
func (s *security) network() netx.Network {
	if s.tls == nil {
		return netx.TCP
	}
	return tlsx.DialNetwork(netx.TCP, s.tls)
}

// clientACL is the ACL of ClientUser on a run: Pub, Sub and Get on the
// run's topics (sends, pulls and route queries, and the offset queries
// GET_MAX_OFFSET/GET_MIN_OFFSET, which need Get), and Sub on its groups
// (pulls, heartbeats, offsets, queue locks; retry topics are their
// group's resource). Topics and groups are all named verify-<runID>-...:
// prefixed resources cover every workload's.
func clientACL(runID string) rmq.AclInfo {
	prefix := "verify-" + runID + "-*"
	return rmq.AclInfo{
		Subject: "User:" + ClientUser,
		Policies: []rmq.PolicyInfo{{
			PolicyType: "Custom",
			Entries: []rmq.PolicyEntryInfo{
				{Resource: "Topic:" + prefix, Actions: []string{"Pub", "Sub", "Get"}, Decision: "Allow"},
				{Resource: "Group:" + prefix, Actions: []string{"Sub"}, Decision: "Allow"},
			},
		}},
	}
}

// clientUser is ClientUser with secret, as the 3001/3002 body has it.
func clientUser(secret string) rmq.UserInfo {
	return rmq.UserInfo{Username: ClientUser, Password: secret, UserType: "Normal", UserStatus: "enable"}
}

// master is a group's master as the name servers list it.
type master struct{ group, addr string }

// setupAuth creates ClientUser and its ACL on every master of the
// cluster, checks that each refuses what it must, and returns the
// Security line's detail. Any failure stops the run: a run that could not
// set up its user would only measure refusals.
func (r *run) setupAuth(ctx context.Context, runID string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, authSetupTimeout)
	defer cancel()
	sec := r.sec
	admin := remoting.NewClient(remoting.ClientOptions{Network: sec.network(), Logger: r.log,
		Sign: sec.sign(sec.admin)})
	defer admin.Close()
	masters, err := r.masters(ctx, admin)
	if err != nil {
		return "", setupErr("auth: %v", err)
	}
	acl := clientACL(runID)
	for _, m := range masters {
		if err := setupUser(ctx, admin, m, sec.client.SecretKey, acl); err != nil {
			return "", setupErr("auth: %v", err)
		}
	}
	for _, m := range masters {
		if err := checkRefusals(ctx, sec, m, runID); err != nil {
			return "", setupErr("auth: %v", err)
		}
	}
	var entries []string
	for _, e := range acl.Policies[0].Entries {
		entries = append(entries, strings.Join(e.Actions, "/")+" on "+e.Resource)
	}
	return fmt.Sprintf("workloads signed as normal user %s allowed %s, set up on %d master(s), each refusing an unsigned request and a topic creation by %s",
		ClientUser, strings.Join(entries, ", "), len(masters), ClientUser), nil
}

// masters asks the name servers for every group's master, until there is
// one per group of the topology.
func (r *run) masters(ctx context.Context, cl *remoting.Client) ([]master, error) {
	want := len(r.cl.Topology().Groups)
	var last error
	for i := 1; ; i++ {
		got, err := clusterMasters(ctx, cl, r.cl.NameServers())
		if err == nil && len(got) >= want {
			return got, nil
		}
		if err == nil {
			err = fmt.Errorf("the name servers list %d of the %d groups' masters", len(got), want)
		}
		if last == nil || ctx.Err() == nil {
			last = err // not the deadline's own failure over an earlier answer
		}
		t := time.NewTimer(time.Duration(min(i, 10)) * 50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("find the masters: %w (last: %v)", ctx.Err(), last)
		case <-t.C:
		}
	}
}

// clusterMasters is the masters of the first name server that answers
// GET_BROKER_CLUSTER_INFO, sorted by group.
func clusterMasters(ctx context.Context, cl *remoting.Client, nameServers []string) ([]master, error) {
	var errs []error
	for _, ns := range nameServers {
		resp, err := cl.Invoke(ctx, ns, rmq.EncodeClusterInfoRequest())
		if err == nil && resp.Code != rmq.RespSuccess {
			err = fmt.Errorf("code %d: %s", resp.Code, resp.Remark)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("name server %s: cluster info: %w", ns, err))
			continue
		}
		ci, err := rmq.DecodeClusterInfoBody(resp.Body)
		if err != nil {
			errs = append(errs, fmt.Errorf("name server %s: cluster info: %w", ns, err))
			continue
		}
		var out []master
		for name, b := range ci.BrokerAddrTable {
			if a := b.BrokerAddrs[rmq.MasterID]; a != "" {
				out = append(out, master{group: name, addr: a})
			}
		}
		slices.SortFunc(out, func(a, b master) int { return strings.Compare(a.group, b.group) })
		return out, nil
	}
	return nil, errors.Join(errs...)
}

// setupUser creates ClientUser with secret and acl on m, or updates them
// when they are there already (a setup sent again).
func setupUser(ctx context.Context, admin *remoting.Client, m master, secret string, acl rmq.AclInfo) error {
	u := clientUser(secret)
	if err := createOrUpdate(ctx, admin, m.addr, rmq.EncodeCreateUser(u), rmq.EncodeUpdateUser(u)); err != nil {
		return fmt.Errorf("create user %s on %s (%s): %w; see the broker's log", ClientUser, m.group, m.addr, err)
	}
	if err := createOrUpdate(ctx, admin, m.addr, rmq.EncodeCreateACL(acl), rmq.EncodeUpdateACL(acl)); err != nil {
		return fmt.Errorf("create the ACL of %s on %s (%s): %w; see the broker's log", acl.Subject, m.group, m.addr, err)
	}
	return nil
}

// createOrUpdate sends create and, when the broker refuses it, update.
func createOrUpdate(ctx context.Context, cl *remoting.Client, addr string, create, update *remoting.Command) error {
	resp, err := cl.Invoke(ctx, addr, create)
	if err != nil {
		return err
	}
	if resp.Code == rmq.RespSuccess {
		return nil
	}
	again, err := cl.Invoke(ctx, addr, update)
	if err != nil {
		return fmt.Errorf("the create was refused (code %d: %s) and the update got no answer: %w", resp.Code, resp.Remark, err)
	}
	if again.Code != rmq.RespSuccess {
		return fmt.Errorf("the create was refused (code %d: %s), and the update too (code %d: %s)", resp.Code, resp.Remark, again.Code, again.Remark)
	}
	return nil
}

// checkRefusals makes sure m enforces --auth before the run relies on it:
// an unsigned heartbeat and a topic creation by ClientUser must be
// refused (NO_PERMISSION), a heartbeat signed by ClientUser accepted.
func checkRefusals(ctx context.Context, sec *security, m master, runID string) error {
	unsigned := remoting.NewClient(remoting.ClientOptions{Network: sec.network()})
	defer unsigned.Close()
	signed := remoting.NewClient(remoting.ClientOptions{Network: sec.network(),
		Sign: sec.sign(sec.client)})
	defer signed.Close()
	hb := func() *remoting.Command {
		return rmq.EncodeHeartbeat(rmq.HeartbeatData{ClientID: "verify-auth-check@" + runID,
			ProducerDataSet: []rmq.ProducerData{{GroupName: "verify-" + runID + "-auth-check-pg"}}})
	}
	resp, err := unsigned.Invoke(ctx, m.addr, hb())
	if err != nil {
		return fmt.Errorf("%s (%s): unsigned heartbeat: %w", m.group, m.addr, err)
	}
	if resp.Code != rmq.RespNoPermission {
		return fmt.Errorf("%s (%s) answered an unsigned heartbeat with code %d, not NO_PERMISSION (16): it does not enforce --auth", m.group, m.addr, resp.Code)
	}
	resp, err = signed.Invoke(ctx, m.addr, hb())
	if err != nil {
		return fmt.Errorf("%s (%s): heartbeat of %s: %w", m.group, m.addr, ClientUser, err)
	}
	if resp.Code != rmq.RespSuccess {
		return fmt.Errorf("%s (%s) refused a heartbeat signed by %s (code %d: %s): the user it was just given does not authenticate", m.group, m.addr, ClientUser, resp.Code, resp.Remark)
	}
	create := rmq.EncodeCreateTopic(rmq.CreateTopicRequest{Topic: "verify-" + runID + "-auth-check", ReadQueueNums: 1, WriteQueueNums: 1,
		Perm: rmq.PermRead | rmq.PermWrite})
	resp, err = signed.Invoke(ctx, m.addr, create)
	if err != nil {
		return fmt.Errorf("%s (%s): topic creation by %s: %w", m.group, m.addr, ClientUser, err)
	}
	if resp.Code != rmq.RespNoPermission {
		return fmt.Errorf("%s (%s) answered a topic creation by normal user %s, whose ACL allows no Create, with code %d, not NO_PERMISSION (16): it does not authorize requests", m.group, m.addr, ClientUser, resp.Code)
	}
	return nil
}

// recordSecurity writes the history's Security line (none when neither
// --auth nor --tls is on).
func (r *run) recordSecurity(authDetail string) error {
	var on, details []string
	if r.cfg.Auth {
		on, details = append(on, history.SecurityAuth), append(details, authDetail)
	}
	if r.cfg.TLS {
		on = append(on, history.SecurityTLS)
		details = append(details, "every process with --tls-mode enforcing and a certificate of the run's CA, which every client verifies")
	}
	if len(on) == 0 {
		return nil
	}
	op := history.New(history.Info, history.Security)
	op.Process, op.Value = "verify", history.SecurityValue(on, strings.Join(details, "; "))
	if _, err := r.hist.Append(op); err != nil {
		return setupErr("%v", err)
	}
	return nil
}
