package brokerfront

// A send's properties arrive encoded (name 0x01 value 0x02 ...), so a
// value holding a separator byte rewrites other properties: user property
// "k" = "x\x02TAGS\x01injected" arrives as "k\x01x\x02TAGS\x01injected\x02"
// and changes the message's tag. Clients do not escape the separators, so
// the broker cannot tell such a value from real properties; it refuses
// what can only come from one: an item that is not exactly one name and
// one value, an empty name, a name that appears twice. The gRPC front
// refuses the separators in keys and values outright (it gets them apart).

import (
	"errors"
	"fmt"
	"strings"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
)

// checkSendProperties answers MESSAGE_ILLEGAL to a send whose properties
// (props, as sent), or those of a batch item, are ambiguous or ask for a
// delay that does not parse; nil when they do not. It sets sr.Delay, or
// for a batch sr.ItemDelays (nil when no item is delayed). A batch body
// that does not decode is left to the broker to refuse.
func checkSendProperties(req *remoting.Command, sr *broker.SendRequest, props string) *remoting.Command {
	if !sr.Batch {
		if problem := propertiesProblem(props); problem != "" {
			return remoting.NewResponse(req, rmq.RespMessageIllegal, problem)
		}
		d, err := rmq.PropertiesDelay(props)
		if err != nil {
			return remoting.NewResponse(req, rmq.RespMessageIllegal, err.Error())
		}
		sr.Delay = d
		return nil
	}
	var found error
	i := 0
	_ = message.DecodeBatch(sr.Body, func(it message.BatchItem) error {
		if problem := propertiesProblem(it.Properties); problem != "" {
			found = fmt.Errorf("batch item %d: %s", i, problem)
			return errStopBatch
		}
		d, err := rmq.PropertiesDelay(it.Properties)
		if err != nil {
			found = err
			return errStopBatch
		}
		if !d.IsZero() {
			// Items before i without a delay get zero ones.
			sr.ItemDelays = append(sr.ItemDelays, make([]message.Delay, i-len(sr.ItemDelays))...)
			sr.ItemDelays = append(sr.ItemDelays, d)
		}
		i++
		return nil
	})
	if found != nil {
		return remoting.NewResponse(req, rmq.RespMessageIllegal, found.Error())
	}
	return nil
}

var errStopBatch = errors.New("brokerfront: stop")

// smallProps is how many properties propertiesProblem compares pairwise
// (no allocation); beyond it, a map.
const smallProps = 32

// propertiesProblem describes what is ambiguous in encoded properties, or
// returns "" when nothing is. A final separator is optional.
func propertiesProblem(props string) string {
	const fix = "; property names and values must not contain the bytes 0x01 and 0x02"
	var small [smallProps]string
	names := small[:0]
	var seen map[string]struct{}
	for rest := props; rest != ""; {
		item, after, _ := strings.Cut(rest, string(message.PropertySeparator))
		rest = after
		name, value, ok := strings.Cut(item, string(message.NameValueSeparator))
		switch {
		case !ok:
			return fmt.Sprintf("properties hold %s without a name", quoteShort(item)) + fix
		case name == "":
			return fmt.Sprintf("properties hold a value %s without a name", quoteShort(value)) + fix
		case strings.IndexByte(value, message.NameValueSeparator) >= 0:
			return fmt.Sprintf("the value of property %s contains 0x01", quoteShort(name)) + fix
		}
		if seen == nil && len(names) == smallProps {
			seen = make(map[string]struct{}, 2*smallProps)
			for _, n := range names {
				seen[n] = struct{}{}
			}
		}
		dup := false
		if seen != nil {
			_, dup = seen[name]
			seen[name] = struct{}{}
		} else {
			for _, n := range names {
				dup = dup || n == name
			}
			names = append(names, name)
		}
		if dup {
			return fmt.Sprintf("property %s appears twice (a value holding 0x02 adds properties)", quoteShort(name)) + fix
		}
	}
	return ""
}

// quoteShort quotes s for a remark, cut to 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%q...", s[:64])
	}
	return fmt.Sprintf("%q", s)
}
