package broker

// TopicsVersion is the data version of the topic table (it changes with
// every topic change; name servers compare it).
func (b *Broker) TopicsVersion() DataVersion { return versionFromMeta(b.meta.TopicsVersion()) }

// GroupsVersion is the data version of the subscription-group table.
func (b *Broker) GroupsVersion() DataVersion { return versionFromMeta(b.meta.GroupsVersion()) }
