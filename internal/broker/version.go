package broker

import "github.com/petrelmq/petrel/internal/store/meta"

// TopicsVersion is the data version of the topic table (it changes with
// every topic change; name servers compare it).
func (b *Broker) TopicsVersion() meta.DataVersion { return b.meta.TopicsVersion() }

// GroupsVersion is the data version of the subscription-group table.
func (b *Broker) GroupsVersion() meta.DataVersion { return b.meta.GroupsVersion() }
