package doctor

import (
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/result"
)

// Subject is what a step's Report is about: its command, its far end
// (the agent, the database, the path) and what sets one measurement of
// it apart from another of the same kind (the direction, the sizes, the
// disk's path and profiles, the commit's block). Two steps' findings
// with the same code and the same subject say the same thing, whatever
// their words; findings of one Report are each their own (one replica's
// verdict and another's share a code).
func Subject(rep *result.Report) string {
	parts := []string{rep.Command, rep.Target}
	switch {
	case rep.Stream != nil:
		parts = append(parts, rep.Stream.Config.Direction)
	case rep.Loaded != nil:
		parts = append(parts, "under load")
	case rep.RR != nil:
		parts = append(parts, fmt.Sprintf("%d/%d B", rep.RR.Config.RequestBytes, rep.RR.Config.ResponseBytes))
	case rep.Commit != nil:
		parts = append(parts, fmt.Sprintf("%d B %s", rep.Commit.Config.BlockBytes, rep.Commit.Config.Ack))
	case rep.Disk != nil:
		parts = append(parts, rep.Disk.Agent, rep.Disk.Path, strings.Join(rep.Disk.Config.Profiles, "+"))
	}
	return strings.Join(parts, " ")
}
