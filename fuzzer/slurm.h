// A campaign on a Slurm cluster: one job array, a task per shard. Task i runs the ordinary
// `wsfuzz <the campaign's flags> --shard i/N --db SHARED/shard-i.sqlite` on its node (its GPUs,
// or the emulator on a CPU partition), so everything a local campaign does holds per task:
// a task killed at any point is resumed by running it again, which judges exactly the mutants
// without a verdict. The shared directory holds the batch script (campaign.sbatch, readable and
// submittable by hand), what was submitted (campaign.json), the shard databases and the tasks'
// logs; `wsfuzz merge` makes the shards one campaign database.
//
// Slurm's own state (squeue, then sacct or scontrol) says which tasks are pending or running and
// how an ended one ended; whether a shard is done is the shard database's to say (its plan and a
// verdict for each of its mutants), since a local cluster without accounting storage has no
// sacct and a controller forgets ended jobs after MinJobAge.
#pragma once

#include "campaign.h"

#include <functional>
#include <string>
#include <vector>

namespace wsr::fuzz::slurm {

using Log = std::function<void(const std::string &)>;

struct SubmitOptions {
  std::string dir;  // the shared directory, absolute
  int shards = 0;
  std::string partition, gres, time_limit;  // passed to sbatch as given ("": Slurm's default)
  int array_limit = 0;                      // at most this many tasks at once (0: no limit)
  int cpus_per_task = 0;                    // 0: Slurm's default
  std::vector<std::string> sbatch_args;     // more sbatch options, one #SBATCH line each
  std::vector<std::string> task_args;  // the ordinary wsfuzz flags every task gets (taskArguments)
  std::string wsfuzz;                  // the wsfuzz every task runs (this one), absolute
  std::string cwd;  // where the tasks start: relative paths in task_args mean what they mean here
  std::vector<PlanKey> plan;  // what a shard has planned when its plan is complete
  bool reduce = false;        // --reduce: a shard is done when its detected mutants are reduced
  std::string command;        // the submit command, for the script's header
};

// The arguments of a `wsfuzz slurm submit ...` command line that every task passes on to the
// ordinary wsfuzz: argv less argv[0], the command words and the flags named in `own` (each with
// its value). "" or the sentence that says what cannot be passed on (--shard and --db are the
// task's own, one more positional word is a mistake).
std::string taskArguments(int argc, char **argv, const std::vector<std::string> &own,
                          std::vector<std::string> *out);

// The batch script `submit` writes: a header that says what it is, #SBATCH lines, the task.
std::string batchScript(const SubmitOptions &o, const std::string &job_name);

// Each returns the process's exit status: 0 done, 2 bad input (one sentence through `log`,
// nothing of a campaign changed), 1 (status --wait) a task ended with its shard incomplete.
int submit(const SubmitOptions &o, const Log &log);  // the job id on stdout
int status(const std::string &dir, bool wait, const Log &log);
int resume(const std::string &dir, const Log &log);            // the new job id on stdout, if any
int cancel(const std::string &dir, int task, const Log &log);  // task -1: all

// The shard databases of a campaign directory in task order; "" or the sentence in *err (no
// campaign there). A shard whose task never wrote its database is left out and named in *missing.
std::vector<std::string> shardDatabases(const std::string &dir, std::vector<std::string> *missing,
                                        std::string *err);

}  // namespace wsr::fuzz::slurm
