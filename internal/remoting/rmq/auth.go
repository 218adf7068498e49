package rmq

// RocketMQ 5.3's ACL 2.0 management requests (mqadmin createUser ...
// listAcl): their codes, header fields and JSON bodies.

// Codes of the user and ACL management requests (RequestCode AUTH_*).
const (
	CodeAuthCreateUser int16 = 3001
	CodeAuthUpdateUser int16 = 3002
	CodeAuthDeleteUser int16 = 3003
	CodeAuthGetUser    int16 = 3004
	CodeAuthListUser   int16 = 3005
	CodeAuthCreateACL  int16 = 3006
	CodeAuthUpdateACL  int16 = 3007
	CodeAuthDeleteACL  int16 = 3008
	CodeAuthGetACL     int16 = 3009
	CodeAuthListACL    int16 = 3010
)

// Header fields of those requests: create/update/delete/get user carry
// FieldUsername; list users FieldFilter; create/update/get ACL
// FieldSubject; delete ACL FieldSubject, FieldPolicyType and
// FieldResource; list ACLs FieldSubjectFilter and FieldResourceFilter.
const (
	FieldUsername       = "username"
	FieldFilter         = "filter"
	FieldSubject        = "subject"
	FieldPolicyType     = "policyType"
	FieldResource       = "resource"
	FieldSubjectFilter  = "subjectFilter"
	FieldResourceFilter = "resourceFilter"
)

// The signature fields every signed 4.x request carries.
const (
	FieldAccessKey     = "AccessKey"
	FieldSignature     = "Signature"
	FieldSecurityToken = "SecurityToken"
)

// UserInfo is the JSON body of create/update user requests and of get
// user answers (list answers are a JSON array of them).
type UserInfo struct {
	Username   string `json:"username,omitempty"`
	Password   string `json:"password,omitempty"`
	UserType   string `json:"userType,omitempty"`   // "Super" | "Normal"
	UserStatus string `json:"userStatus,omitempty"` // "enable" | "disable"
}

// AclInfo is the JSON body of create/update ACL requests and of get ACL
// answers (list answers are a JSON array of them).
type AclInfo struct {
	Subject  string       `json:"subject,omitempty"` // "User:NAME"
	Policies []PolicyInfo `json:"policies,omitempty"`
}

// PolicyInfo is one policy of an AclInfo.
type PolicyInfo struct {
	PolicyType string            `json:"policyType,omitempty"` // "Custom" | "Default"
	Entries    []PolicyEntryInfo `json:"entries,omitempty"`
}

// PolicyEntryInfo is one entry: a resource string ("Topic:orders",
// "Group:g*", "Cluster", "*"), actions ("Pub", "Sub", ...), source IPs
// (addresses or CIDR ranges) and "Allow" | "Deny".
type PolicyEntryInfo struct {
	Resource  string   `json:"resource,omitempty"`
	Actions   []string `json:"actions,omitempty"`
	SourceIps []string `json:"sourceIps,omitempty"`
	Decision  string   `json:"decision,omitempty"`
}
