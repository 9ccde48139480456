package main

import (
	"flag"
	"fmt"
	"strings"
)

// configurationReference renders docs/configuration.md from the flag
// definitions of `herald serve`: one row a flag with its environment
// variable, default and meaning.
func configurationReference() string {
	var b strings.Builder
	b.WriteString(`# Configuration reference

<!-- Made from the flag definitions of herald serve: edit those, then run
     go test ./cmd/herald -run TestConfigurationReference -update -->

Every flag of ` + "`herald serve`" + ` can also be set with an environment variable,
` + "`HERALD_`" + ` and the flag's name in capitals with ` + "`_`" + ` for ` + "`-`" + `; a flag on the
command line wins over the environment. ` + "`herald serve --help`" + ` prints the same
list.

Three settings are environment variables only, because a flag's value is
visible to every user in the process list: ` + "`HERALD_ADMIN_KEY`" + ` (the admin
key), ` + "`HERALD_KEK`" + ` (the key-encryption key, ` + "`<id>:<base64 key>`" + `) and, when it
holds a password, ` + "`HERALD_POSTGRES_URL`" + `.

| flag | environment | default | meaning |
| --- | --- | --- | --- |
`)
	fs := serveFlags(&serveConfig{})
	fs.VisitAll(func(f *flag.Flag) {
		def := "none"
		if f.DefValue != "" {
			def = "`" + f.DefValue + "`"
		}
		usage := strings.ReplaceAll(f.Usage, "|", `\|`)
		fmt.Fprintf(&b, "| `--%s` | `%s` | %s | %s |\n", f.Name, envName(f.Name), def, usage)
	})
	return b.String()
}
