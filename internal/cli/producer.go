package cli

import (
	"context"
	"fmt"
	"sort"

	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// ProducerEntry is one producer connection of `producer list`.
type ProducerEntry struct {
	Group    string `json:"group"`
	ClientID string `json:"clientId"`
	Address  string `json:"address"`
	Language string `json:"language"`
	Version  int32  `json:"version"`
	// LastUpdate is the producer's last heartbeat (ms).
	LastUpdate int64  `json:"lastUpdate"`
	Broker     string `json:"broker"`
}

// ProducerList writes the producers connected to each master broker
// (GET_ALL_PRODUCER_INFO, 328), of group only when group is not "".
func (c *CLI) ProducerList(ctx context.Context, group string) error {
	ms, err := c.masters(ctx)
	if err != nil {
		return err
	}
	ps := []ProducerEntry{}
	for _, m := range ms {
		resp, err := c.callOK(ctx, m.addr, "producers", remoting.NewRequest(rmq.CodeGetAllProducerInfo, nil, nil))
		if err != nil {
			return err
		}
		t, err := rmq.DecodeProducerTableBody(resp.Body)
		if err != nil {
			return fmt.Errorf("%w: producers of %s: %w", ErrRefused, m.addr, err)
		}
		for g, list := range t.Data {
			if group != "" && g != group {
				continue
			}
			for _, p := range list {
				ps = append(ps, ProducerEntry{Group: g, ClientID: p.ClientID, Address: p.RemoteIP, Language: p.Language,
					Version: p.Version, LastUpdate: p.LastUpdateTimestamp, Broker: m.name})
			}
		}
	}
	sort.Slice(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.ClientID != b.ClientID {
			return a.ClientID < b.ClientID
		}
		return a.Broker < b.Broker
	})
	if c.json() {
		return c.writeJSON(ps)
	}
	if len(ps) == 0 {
		if group != "" {
			fmt.Fprintf(c.cfg.Out, "No producer of group %s is connected.\n", group)
		} else {
			fmt.Fprintln(c.cfg.Out, "No producer is connected.")
		}
		return nil
	}
	t := newTable("GROUP", "CLIENT ID", "ADDRESS", "LANGUAGE", "VERSION", "LAST UPDATE", "BROKER")
	for _, p := range ps {
		t.add(p.Group, p.ClientID, p.Address, p.Language, p.Version, formatTime(p.LastUpdate), p.Broker)
	}
	return t.write(c.cfg.Out)
}
