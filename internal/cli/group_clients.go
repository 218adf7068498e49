package cli

import (
	"context"
	"fmt"
)

// GroupClients is the answer of `group clients`: the group's connected
// consumers, as every master reports them (203).
type GroupClients struct {
	Group         string              `json:"group"`
	ConsumeType   string              `json:"consumeType"`
	MessageModel  string              `json:"messageModel"`
	Clients       []GroupMember       `json:"clients"`
	Subscriptions []GroupSubscription `json:"subscriptions"`
}

// GroupClients writes the consumers connected for group on each master
// broker: client id, address, language, version, and the group's consume
// type, model and subscriptions.
func (c *CLI) GroupClients(ctx context.Context, group string) error {
	if group == "" {
		return fmt.Errorf("%w: name the consumer group", ErrUsage)
	}
	ms, err := c.masters(ctx)
	if err != nil {
		return err
	}
	d, known, err := c.describeGroup(ctx, ms, group)
	if err != nil {
		return err
	}
	if !known {
		return errUnknownGroup(group)
	}
	g := GroupClients{Group: group, ConsumeType: d.ConsumeType, MessageModel: d.MessageModel, Clients: d.Members, Subscriptions: d.Subscriptions}
	if c.json() {
		return c.writeJSON(g)
	}
	w := c.cfg.Out
	if len(g.Clients) == 0 {
		fmt.Fprintf(w, "No consumer of group %s is connected.\n", group)
		return nil
	}
	fmt.Fprintf(w, "Group:        %s\nModel:        %s\nConsume type: %s\n\n", group, dash(g.MessageModel), dash(g.ConsumeType))
	t := newTable("CLIENT ID", "ADDRESS", "LANGUAGE", "VERSION", "BROKER")
	for _, m := range g.Clients {
		t.add(m.ClientID, m.Address, m.Language, m.Version, m.Broker)
	}
	if err := t.write(w); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nSubscriptions:")
	t = newTable("TOPIC", "EXPRESSION", "TYPE")
	for _, s := range g.Subscriptions {
		t.add(s.Topic, s.Expression, s.Type)
	}
	return t.write(w)
}
