package namesrv

// Topic lists of the name server (RocketMQ's DefaultRequestProcessor):
// 224 GET_TOPICS_BY_CLUSTER (ext cluster) answers the topics any broker
// name of the cluster routes; 304 GET_SYSTEM_TOPIC_LIST_FROM_NS answers
// the cluster names and broker names (RocketMQ lists them as "system
// topics": the topics brokers create under their own names) and, in
// brokerAddr, one live broker's address, which mqadmin then asks for its
// own system topics (305).

import (
	"context"
	"slices"

	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

func (s *Server) registerTopicLists() {
	s.rs.Handle(rmq.CodeGetTopicsByCluster, s.topicsByCluster)
	s.rs.Handle(rmq.CodeGetSystemTopicListFromNS, s.systemTopics)
}

// TopicsByCluster returns the topics routed by the broker names of
// cluster, sorted; empty for an unknown cluster.
func (t *Table) TopicsByCluster(cluster string) []string {
	set := map[string]struct{}{}
	for name := range t.brokers {
		if t.brokerData(name).Cluster != cluster {
			continue
		}
		for topic := range t.topicsOf(name) {
			set[topic] = struct{}{}
		}
	}
	out := make([]string, 0, len(set))
	for topic := range set {
		out = append(out, topic)
	}
	slices.Sort(out)
	return out
}

// SystemTopics returns the cluster and broker names, sorted, and the
// address of one live broker (the master of the first broker name that
// has one, else any process of it); empty without brokers.
func (t *Table) SystemTopics() (names []string, brokerAddr string) {
	ci := t.ClusterInfo()
	set := map[string]struct{}{}
	for cluster, brokers := range ci.ClusterAddrTable {
		set[cluster] = struct{}{}
		for _, b := range brokers {
			set[b] = struct{}{}
		}
	}
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	brokerNames := make([]string, 0, len(ci.BrokerAddrTable))
	for n := range ci.BrokerAddrTable {
		brokerNames = append(brokerNames, n)
	}
	slices.Sort(brokerNames)
	for _, n := range brokerNames {
		addrs := ci.BrokerAddrTable[n].BrokerAddrs
		if a, ok := addrs[MasterID]; ok {
			return names, a
		}
		ids := make([]int64, 0, len(addrs))
		for id := range addrs {
			ids = append(ids, id)
		}
		if len(ids) > 0 {
			return names, addrs[slices.Min(ids)]
		}
	}
	return names, ""
}

func (s *Server) topicsByCluster(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeGetTopicsByCluster(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	s.mu.Lock()
	topics := s.table.TopicsByCluster(h.Cluster)
	s.mu.Unlock()
	return bodyResponse(req, rmq.EncodeTopicListBody(rmq.TopicListBody{TopicList: topics}))
}

func (s *Server) systemTopics(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	s.mu.Lock()
	names, addr := s.table.SystemTopics()
	s.mu.Unlock()
	return bodyResponse(req, rmq.EncodeTopicListAddr(rmq.TopicListAddr{TopicList: names, BrokerAddr: addr}))
}
