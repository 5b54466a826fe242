package cli

import (
	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/disk"
)

// measureFlags are how `plan backup --to` measures the stages.
type measureFlags struct {
	to, dataPath, backupPath, stage, diskSize, sample string
	streams                                           int
	agent                                             agentFlags
}

// config reads the flags into m, the measurement of the codecs given,
// before anything is measured.
func (mf measureFlags) config(env Env, m command.BackupMeasure, codecs []string) (*command.BackupMeasure, error) {
	opts, err := mf.agent.options(env, "--to", mf.to)
	if err != nil {
		return nil, err
	}
	m.Agent, m.To, m.DataPath, m.BackupPath, m.Sample, m.Streams, m.Codecs = opts, mf.to, mf.dataPath, mf.backupPath, mf.sample, mf.streams, codecs
	if m.Stage, err = positiveDuration("--stage-duration", mf.stage); err != nil {
		return nil, err
	}
	size, err := metric.ParseSize(mf.diskSize)
	if err != nil || size < disk.MinSize {
		return nil, usagef("--disk-size %q: %s", mf.diskSize, errOr(err, "use at least 1M"))
	}
	m.DiskSize = size
	return &m, nil
}
