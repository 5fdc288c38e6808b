// Package rules holds the audit rules of each implementation, one file per
// implementation, each registering its rules with audit.Register from init.
package rules
