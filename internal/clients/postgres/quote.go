package postgres

import (
	"strings"

	"github.com/jackc/pgx/v5"
)

// QuoteIdentifier quotes a PostgreSQL identifier.
func QuoteIdentifier(name string) string {
	return pgx.Identifier{name}.Sanitize()
}

// QuoteLiteral quotes a string literal for statements that take no bind
// parameters (DDL). It doubles single quotes and, since
// standard_conforming_strings is on in every supported server, treats
// backslashes literally; an E” literal is used when the value holds a
// backslash, so that it means the same whatever that setting.
func QuoteLiteral(s string) string {
	s = strings.ReplaceAll(s, "\x00", "")
	if strings.Contains(s, `\`) {
		return "E'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", "''") + "'"
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// QuoteLiteralOneLine quotes a string literal as QuoteLiteral does, on
// one line: for a statement a message offers a person to copy, where a
// line break inside the literal would cut the statement in two for
// anyone who picks it out line by line. A value holding a line break is
// written as an E” literal with \n and \r.
func QuoteLiteralOneLine(s string) string {
	s = strings.ReplaceAll(s, "\x00", "")
	if !strings.ContainsAny(s, "\n\r") {
		return QuoteLiteral(s)
	}
	return "E'" + strings.NewReplacer(`\`, `\\`, "'", "''", "\n", `\n`, "\r", `\r`).Replace(s) + "'"
}
