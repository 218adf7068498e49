package broker

// Settings changed at run time (UPDATE_BROKER_CONFIG, `petrel broker
// config set`). Every other Config field is fixed at New; these two are
// read on each send through atomics, so a change takes effect for the
// next request without a lock on the send path.
//
//   - AutoCreateTopics: whether a send to an unknown topic creates it
//     (RocketMQ's autoCreateTopicEnable). Turning it on creates the
//     template topic TBW102 if it is missing (New creates it only when
//     the setting is on at start), so that clients find its route.
//   - Permission: the broker's own permission (RocketMQ's
//     brokerPermission, PermRead|PermWrite by default). Without
//     PermWrite the broker refuses every send (NO_PERMISSION), and the
//     topics it registers with the name servers carry perm & Permission
//     (the daemon masks them; Permission is what it reads), so that
//     producers move to other brokers at their next route refresh. A
//     restart goes back to the configured value (the flags hold none:
//     read-write).

import (
	"fmt"
	"sync/atomic"

	"github.com/petrelmq/petrel/internal/store/meta"
)

// runtimeSettings are the settings of this file; the zero value is not
// ready: init sets them from the Config.
type runtimeSettings struct {
	autoCreate atomic.Bool
	perm       atomic.Int32
}

func (s *runtimeSettings) init(cfg Config) {
	s.autoCreate.Store(cfg.AutoCreateTopics)
	s.perm.Store(PermRead | PermWrite)
}

// AutoCreateTopics reports whether sends to unknown topics create them.
func (b *Broker) AutoCreateTopics() bool { return b.settings.autoCreate.Load() }

// SetAutoCreateTopics turns topic auto-creation on or off for the sends
// that follow. Turning it on creates the template topic when it is
// missing; an error (the topic table could not be written) leaves the
// setting as it was.
func (b *Broker) SetAutoCreateTopics(on bool) error {
	if on {
		if _, err := b.ensureTopic(meta.Topic{Name: TemplateTopic, ReadQueueNums: b.cfg.DefaultTopicQueueNums, WriteQueueNums: b.cfg.DefaultTopicQueueNums,
			Perm: meta.PermRead | meta.PermWrite | meta.PermInherit, TopicFilterType: "SINGLE_TAG"}); err != nil {
			return err
		}
	}
	if b.settings.autoCreate.Swap(on) != on {
		b.log.Info("topic auto-creation changed", "auto_create_topics", on)
	}
	return nil
}

// Permission is the broker's own permission: PermRead, PermWrite or
// both (RocketMQ's brokerPermission).
func (b *Broker) Permission() int32 { return b.settings.perm.Load() }

// SetPermission sets the broker's permission to perm, a sum of PermRead
// and PermWrite (PermInherit is refused: it is a topic's bit). It
// reports whether the permission changed.
func (b *Broker) SetPermission(perm int32) (changed bool, err error) {
	if perm < 0 || perm&^(PermRead|PermWrite) != 0 {
		return false, fmt.Errorf("broker: permission %d is not a sum of 4 (read) and 2 (write)", perm)
	}
	if old := b.settings.perm.Swap(perm); old != perm {
		b.log.Info("broker permission changed", "perm", perm, "was", old)
		return true, nil
	}
	return false, nil
}

// refuseWithoutWritePermission is the send path's check of Permission.
func (b *Broker) refuseWithoutWritePermission() *Error {
	if b.settings.perm.Load()&PermWrite != 0 {
		return nil
	}
	return errorf(KindNoPermission, nil, "broker %s takes no sends: its write permission is off (brokerPermission %d, a drain); send to another broker, or restore it with `petrel broker config set brokerPermission=6`", b.cfg.BrokerName, b.settings.perm.Load())
}
