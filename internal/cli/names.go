package cli

import (
	"flag"
	"strings"
)

// One name per flag (issue 27): the agent is --to in every command, the
// size of what each round trip sends --request, the log rate --log-rate.
// The names a flag had before (disk's --on, db ping's --agent and
// --payload, db load's --rate) still set it, so scripts keep working; the
// help lists the flag once, under its one name, and mentions the older.

// stringFlag registers a string flag under name and under its older
// names, all setting *p (value is the default). Two of its names given
// different values is a usage error (parseFlags asks clash).
func stringFlag(fs *flag.FlagSet, p *string, name, value, usage string, older ...string) {
	*p = value
	s := &named{p: p, name: name, older: older}
	fs.Var(&nameOf{named: s, as: name}, name, usage)
	for _, o := range older {
		fs.Var(&nameOf{named: s, as: o}, o, usage)
	}
}

// named is the one value a flag's names share.
type named struct {
	p     *string
	name  string
	older []string
	// given are the names given on the command line, in order, and the
	// last value each was given.
	given  []string
	values map[string]string
}

// nameOf is the flag.Value registered under one of the names, as.
type nameOf struct {
	*named
	as string
}

func (v *nameOf) String() string {
	if v == nil || v.named == nil {
		return ""
	}
	return *v.p
}

func (v *nameOf) Set(s string) error {
	if v.values == nil {
		v.values = map[string]string{}
	}
	if _, ok := v.values[v.as]; !ok {
		v.given = append(v.given, v.as)
	}
	v.values[v.as] = s
	*v.p = s
	return nil
}

// isOlder reports whether this is one of the older names: the help leaves
// it out, the one name's entry mentions it.
func (v *nameOf) isOlder() bool { return v.as != v.name }

// clash says, in words, that two of the names were given two values
// ("" when none were).
func (v *nameOf) clash() string {
	for i, a := range v.given {
		for _, b := range v.given[i+1:] {
			if v.values[a] == v.values[b] {
				continue
			}
			both := "--" + a + " " + v.values[a] + " and --" + b + " " + v.values[b]
			switch {
			case a == v.name:
				return both + ": --" + b + " is --" + a + "'s older name: give one"
			case b == v.name:
				return both + ": --" + a + " is --" + b + "'s older name: give one"
			}
			return both + ": both are older names of --" + v.name + ": give one"
		}
	}
	return ""
}

// alsoOlder is the help's mention of the older names: "(also --on, its
// older name)".
func (v *nameOf) alsoOlder() string {
	names := make([]string, len(v.older))
	for i, o := range v.older {
		names[i] = "--" + o
	}
	if len(names) == 1 {
		return "(also " + names[0] + ", its older name)"
	}
	return "(also " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + ", its older names)"
}

// clash is the first of fs's flags given two values under two of its
// names, in words, or "".
func clash(fs *flag.FlagSet) string {
	var c string
	fs.Visit(func(f *flag.Flag) {
		if v, ok := f.Value.(*nameOf); ok && c == "" {
			c = v.clash()
		}
	})
	return c
}
