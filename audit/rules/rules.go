// Package rules holds the audit rules of each implementation, one file per
// implementation, each a list of audit/query rules registered from init.
// Every file reads the same way: the files it audits, then per question a
// rule value (the facts it reads, then its decision).
package rules
