// Several campaign databases made one: the shards of a campaign (`wsfuzz --shard i/N`, one file
// each, as `wsfuzz slurm` runs them) merged into a database that `wsfuzz report` and `compare`
// read as if one process had judged every mutant.
#pragma once

#include <string>
#include <vector>

namespace wsr::fuzz {

struct MergeResult {
  long mutants = 0;   // planned, in the merged database
  long verdicts = 0;  // of them judged
  // Mutants with a verdict in two inputs. A mutant belongs to one shard by its hash, so this is
  // a sign of overlapping shards (the same shard run twice into two files, two campaigns merged):
  // the first input's verdict is kept, each such mutant is named here.
  std::vector<std::string> judged_twice;
  std::vector<std::string> notes;  // inputs that disagree on the campaign's settings
};

// Merges `inputs` (campaign databases, each given once) into the new database `out`, which must
// not exist: mutants and plans by hash (the union), each verdict with its runs and judge_log
// lines, baselines, sanitizer looks, corpus entries, reductions, sessions. The file appears whole
// or not at all (written beside it, then renamed). False with one sentence in *err.
bool mergeCampaigns(const std::string &out, const std::vector<std::string> &inputs,
                    MergeResult *result, std::string *err);

}  // namespace wsr::fuzz
