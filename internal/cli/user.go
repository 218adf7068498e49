package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// The users and ACLs of ACL 2.0 (petrel user, petrel acl) are broker
// metadata: each master keeps its own (its slaves get them by
// replication), so the management commands send their request (RocketMQ
// 5.3's codes 3001-3010, as mqadmin's createUser ... listAcl) to every
// live master the name servers know, or to the one --broker names.

// UserSpec is what `user create` and `user update` send. For update an
// empty field keeps the user's current value.
type UserSpec struct {
	Name string
	// Secret is the user's secret key (RocketMQ's password).
	Secret string
	// Type is "normal" or "super" (any case); "" is normal on create.
	Type string
	// Status is "enable" or "disable"; "" is enable on create.
	Status string
	// Broker limits the request to one broker: an address host:port, or
	// a master's broker name. "" means every live master.
	Broker string
}

// UserInfo is one user as `user get` and `user list` print it. Secret is
// set only when the server sent it (a super user asking for one user by
// name); tables never show it.
type UserInfo struct {
	Broker  string `json:"broker"`
	Address string `json:"address"`
	Name    string `json:"username"`
	Type    string `json:"userType"`
	Status  string `json:"userStatus"`
	Secret  string `json:"password,omitempty"`
}

// AuthResult is the answer of the user and ACL writes: what was done and
// on which brokers; Failed lists the brokers that refused or did not
// answer (the command then fails).
type AuthResult struct {
	// User or Subject names what was changed.
	User    string       `json:"user,omitempty"`
	Subject string       `json:"subject,omitempty"`
	Action  string       `json:"action"` // created, updated, deleted
	Brokers []string     `json:"brokers"`
	Failed  []AuthFailed `json:"failed,omitempty"`
}

// AuthFailed is a broker that did not apply a user or ACL write.
type AuthFailed struct {
	Broker  string `json:"broker"`
	Address string `json:"address"`
	Error   string `json:"error"`
}

// ReadSecretFile reads a secret from path (--secret-file): the whole
// file without its trailing line break. An empty secret is an ErrUsage
// error.
func ReadSecretFile(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%w: --secret-file: %w", ErrUsage, err)
	}
	s := strings.TrimRight(string(raw), "\r\n")
	if s == "" {
		return "", fmt.Errorf("%w: --secret-file %s is empty: write the secret into it", ErrUsage, path)
	}
	return s, nil
}

// parseUserType reads --type: normal or super, any case; "" stays "".
func parseUserType(s string) (string, error) {
	switch strings.ToLower(s) {
	case "":
		return "", nil
	case "normal":
		return "Normal", nil
	case "super":
		return "Super", nil
	}
	return "", fmt.Errorf("%w: --type %q: want normal or super", ErrUsage, s)
}

// parseUserStatus reads --status: enable or disable; "" stays "".
func parseUserStatus(s string) (string, error) {
	switch strings.ToLower(s) {
	case "":
		return "", nil
	case "enable", "enabled":
		return "enable", nil
	case "disable", "disabled":
		return "disable", nil
	}
	return "", fmt.Errorf("%w: --status %q: want enable or disable", ErrUsage, s)
}

func checkUserName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: name the user", ErrUsage)
	case strings.ContainsAny(name, ": \t\r\n,"):
		return fmt.Errorf("%w: user name %q may not hold colons, commas or white space", ErrUsage, name)
	}
	return nil
}

// UserCreate creates a user on every live master (or spec.Broker): type
// normal unless spec.Type says super, enabled unless spec.Status says
// disable.
func (c *CLI) UserCreate(ctx context.Context, spec UserSpec) error {
	info, err := userBody(spec)
	if err != nil {
		return err
	}
	if info.Password == "" {
		return fmt.Errorf("%w: give the new user's secret with --secret or --secret-file", ErrUsage)
	}
	if info.UserType == "" {
		info.UserType = "Normal"
	}
	if info.UserStatus == "" {
		info.UserStatus = "enable"
	}
	return c.userWrite(ctx, spec, "created", func() *remoting.Command { return rmq.EncodeCreateUser(*info) })
}

// UserUpdate changes a user's secret, type or status on every live
// master (or spec.Broker); what spec leaves empty keeps its value.
func (c *CLI) UserUpdate(ctx context.Context, spec UserSpec) error {
	info, err := userBody(spec)
	if err != nil {
		return err
	}
	if info.Password == "" && info.UserType == "" && info.UserStatus == "" {
		return fmt.Errorf("%w: nothing to change: give --secret (or --secret-file), --type or --status", ErrUsage)
	}
	return c.userWrite(ctx, spec, "updated", func() *remoting.Command { return rmq.EncodeUpdateUser(*info) })
}

// UserDelete deletes a user (and its ACL) on every live master (or
// broker).
func (c *CLI) UserDelete(ctx context.Context, name, broker string) error {
	if err := checkUserName(name); err != nil {
		return err
	}
	return c.userWrite(ctx, UserSpec{Name: name, Broker: broker}, "deleted", func() *remoting.Command { return rmq.EncodeDeleteUser(name) })
}

func userBody(spec UserSpec) (*rmq.UserInfo, error) {
	if err := checkUserName(spec.Name); err != nil {
		return nil, err
	}
	typ, err := parseUserType(spec.Type)
	if err != nil {
		return nil, err
	}
	status, err := parseUserStatus(spec.Status)
	if err != nil {
		return nil, err
	}
	return &rmq.UserInfo{Username: spec.Name, Password: spec.Secret, UserType: typ, UserStatus: status}, nil
}

func (c *CLI) userWrite(ctx context.Context, spec UserSpec, action string, mk func() *remoting.Command) error {
	res := AuthResult{User: spec.Name, Action: action}
	err := c.authWrite(ctx, spec.Broker, &res, mk, action[:len(action)-1]+" user "+spec.Name)
	if werr := c.writeAuthResult(res, "user "+spec.Name); werr != nil {
		return werr
	}
	return err
}

// authTargets returns the brokers a management request goes to: broker
// (host:port, or the broker name of a live master) or every live master.
func (c *CLI) authTargets(ctx context.Context, broker string) ([]masterBroker, error) {
	if strings.Contains(broker, ":") {
		return []masterBroker{{name: broker, addr: broker}}, nil
	}
	ms, err := c.masters(ctx)
	if err != nil {
		return nil, err
	}
	if broker != "" {
		ms = slices.DeleteFunc(ms, func(m masterBroker) bool { return m.name != broker })
		if len(ms) == 0 {
			return nil, fmt.Errorf("%w: no live master named %q; see `petrel cluster list`, or give --broker as host:port", ErrNotFound, broker)
		}
	}
	return ms, nil
}

// authWrite sends mk's request to every target, in broker order, and
// records in res where it was applied and where not. It goes on after a
// failure (so one broker down does not leave the others behind) and
// returns an error naming every failure.
func (c *CLI) authWrite(ctx context.Context, broker string, res *AuthResult, mk func() *remoting.Command, what string) error {
	res.Brokers = []string{}
	ms, err := c.authTargets(ctx, broker)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range ms {
		if _, err := c.callOK(ctx, m.addr, what, mk()); err != nil {
			res.Failed = append(res.Failed, AuthFailed{Broker: m.name, Address: m.addr, Error: err.Error()})
			errs = append(errs, err)
			continue
		}
		res.Brokers = append(res.Brokers, m.name)
	}
	if len(errs) == 0 {
		return nil
	}
	if len(res.Brokers) > 0 {
		errs = append(errs, fmt.Errorf("%s was applied on %s only: run the command again once the others answer", what, strings.Join(res.Brokers, ", ")))
	}
	return errors.Join(errs...)
}

func (c *CLI) writeAuthResult(res AuthResult, what string) error {
	if c.json() {
		return c.writeJSON(res)
	}
	if len(res.Brokers) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(c.cfg.Out, "%s %s on %s\n", what, res.Action, strings.Join(res.Brokers, ", "))
	return err
}

// UserGet prints a user as every live master (or broker) has it. None
// knowing it is an ErrNotFound error. The secret is never in the table;
// JSON carries it only when a server sent it.
func (c *CLI) UserGet(ctx context.Context, name, broker string) error {
	if err := checkUserName(name); err != nil {
		return err
	}
	ms, err := c.authTargets(ctx, broker)
	if err != nil {
		return err
	}
	var out []UserInfo
	for _, m := range ms {
		resp, err := c.callOK(ctx, m.addr, "get user "+name, rmq.EncodeGetUser(name))
		if err != nil {
			return err
		}
		if emptyBody(resp.Body) {
			continue // RocketMQ answers an unknown user with SUCCESS and no body
		}
		u, err := rmq.DecodeUserInfo(resp.Body)
		if err != nil {
			return fmt.Errorf("%w: user %s from %s is not valid JSON: %w", ErrRefused, name, m.addr, err)
		}
		out = append(out, userInfo(m, u, true))
	}
	if len(out) == 0 {
		return fmt.Errorf("%w: no broker has user %q; list users with `petrel user list`, create one with `petrel user create %s --secret-file FILE`", ErrNotFound, name, name)
	}
	return c.writeUsers(out)
}

// UserList prints the users of every live master (or broker) whose name
// contains filter ("" all), one row per broker and user.
func (c *CLI) UserList(ctx context.Context, filter, broker string) error {
	ms, err := c.authTargets(ctx, broker)
	if err != nil {
		return err
	}
	out := []UserInfo{}
	for _, m := range ms {
		resp, err := c.callOK(ctx, m.addr, "list users", rmq.EncodeListUsers(rmq.ListUsersRequest{Filter: filter}))
		if err != nil {
			return err
		}
		us, err := rmq.DecodeUserInfos(resp.Body)
		if err != nil {
			return fmt.Errorf("%w: the users of %s are not valid JSON: %w", ErrRefused, m.addr, err)
		}
		for _, u := range us {
			out = append(out, userInfo(m, u, false))
		}
	}
	return c.writeUsers(out)
}

// userInfo is u as printed; withSecret keeps the secret a server sent.
func userInfo(m masterBroker, u rmq.UserInfo, withSecret bool) UserInfo {
	ui := UserInfo{Broker: m.name, Address: m.addr, Name: u.Username, Type: u.UserType, Status: u.UserStatus}
	if withSecret {
		ui.Secret = u.Password
	}
	return ui
}

func (c *CLI) writeUsers(us []UserInfo) error {
	sort.SliceStable(us, func(i, j int) bool {
		if us[i].Name != us[j].Name {
			return us[i].Name < us[j].Name
		}
		return us[i].Broker < us[j].Broker
	})
	if c.json() {
		return c.writeJSON(struct {
			Users []UserInfo `json:"users"`
		}{us})
	}
	t := newTable("USER", "TYPE", "STATUS", "BROKER", "ADDRESS")
	for _, u := range us {
		t.add(u.Name, u.Type, u.Status, u.Broker, u.Address)
	}
	return t.write(c.cfg.Out)
}
