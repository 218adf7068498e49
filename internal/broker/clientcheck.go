package broker

import (
	"errors"

	"github.com/petrelmq/petrel/internal/broker/sqlfilter"
)

// CheckTopicName checks a topic name as CreateTopic does, so that a list
// of topics can be checked whole before any is stored. Errors:
// KindMessageIllegal naming the problem.
func CheckTopicName(name string) error {
	if err := checkTopicName(name); err != nil {
		return err
	}
	return nil
}

// CheckFilter checks a consumer's SQL92 filter expression (RocketMQ's
// CHECK_CLIENT_CONFIG): nil when it compiles, else
// KindSubscriptionParseFailed with the position and what was expected.
func CheckFilter(expr string) error {
	if _, err := sqlfilter.Compile(expr); err != nil {
		var se *sqlfilter.SyntaxError
		if errors.As(err, &se) {
			return errorf(KindSubscriptionParseFailed, err, "%s", se.Error())
		}
		return errorf(KindSubscriptionParseFailed, err, "the SQL92 expression is too long or nests too deep")
	}
	return nil
}
