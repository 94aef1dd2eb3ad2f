#include <torch/torch.h>

#include <algorithm>
#include <cstdio>

#include "rtb/core/log.h"
#include "rtb/core/rng.h"
#include "rtb/learner/agents.h"
#include "rtb/learner/pacing.h"
#include "rtb/learner/replay_store.h"
#include "rtb/simulator/ipinyou.h"

namespace rtb::learn {
namespace {

sim::PacingTable TableOf(MultiAgentLearner& learner, const sim::PacingParams& p) {
  sim::PacingTable t;
  t.params = p;
  for (const auto& s : t.CellStates()) t.actions.push_back(learner.Act(s, false)[0]);
  return t;
}

sim::ReplayTotals PlayTable(const std::vector<sim::LoggedAuction>& log,
                            const sim::CampaignInfo& info, const sim::RlbProtocol& protocol,
                            const sim::PacingTable& t) {
  sim::PacingStrategy s(
      t.params, [&t](const std::vector<float>& st) { return t.Lookup(st); }, false);
  return sim::ReplayRlb(log, info, protocol, s);
}

}  // namespace

HyperParams PacingHyperParams() {
  HyperParams hp;
  hp.actor_hidden = 64;
  hp.critic_hidden = 64;
  hp.batch_size = 64;
  hp.updates_per_step = 4;
  hp.warmup_transitions = 200;
  hp.noise_sigma = 0.4;
  hp.noise_decay = 0.995;
  hp.noise_min = 0.05;
  hp.gamma = 0.99;
  return hp;
}

Result<PacingTrainResult> TrainPacing(const std::vector<sim::LoggedAuction>& log,
                                      const sim::CampaignInfo& info,
                                      const PacingTrainOptions& opt) {
  const int64_t N = opt.protocol.episode_size;
  if (static_cast<int64_t>(log.size()) < N) {
    return Status::InvalidArgument("the training log has " + std::to_string(log.size()) +
                                   " auctions, fewer than one episode (" + std::to_string(N) + ")");
  }
  if (opt.steps <= 0 || N % opt.steps != 0) {
    return Status::InvalidArgument("--steps must divide the episode size");
  }
  auto replay_train = [&](sim::BidStrategy& s) {
    return sim::ReplayRlb(log, info, opt.protocol, s);
  };
  sim::PacingParams params;
  params.b0 = opt.b0 > 0 ? opt.b0 : sim::TuneLinB0(replay_train, info.CtrTrain()).b0;
  params.ctr_avg_train = info.CtrTrain();
  params.bratio = opt.bratio;
  params.episode_size = N;
  params.steps = opt.steps;

  std::unique_ptr<ReplayStore> store;
  if (opt.store_dir.empty()) {
    store = NewMemoryReplayStore();
  } else {
    RTB_ASSIGN_OR_RETURN(store, OpenRocksDbReplayStore(opt.store_dir));
  }
  Normalizer norm;  // one agent, one cluster: the state layout of rtb/simulator/pacing.h
  norm.agents = 1;
  norm.clusters = 1;
  RTB_ASSIGN_OR_RETURN(AlgoSpec spec, MakeAlgoSpec("dcmab", 1, {}, opt.hp));
  MultiAgentLearner learner(spec, opt.hp, norm, opt.seed);

  PacingTrainResult res;
  {
    auto lin = sim::LinBid(params.b0, params.ctr_avg_train);
    res.lin_train = replay_train(*lin);
  }
  Rng rng(Rng::Mix(opt.seed, 0x9ac1));
  Rng sample_rng(Rng::Mix(opt.seed, 0x5a3b));
  const uint64_t windows = log.size() - static_cast<uint64_t>(N) + 1;
  bool have_best = false;
  for (int ep = 1; ep <= opt.episodes; ++ep) {
    // One episode on a random window of N auctions, the actor plus noise deciding.
    const size_t start = static_cast<size_t>(rng.UniformInt(windows));
    const std::vector<sim::LoggedAuction> window(log.begin() + static_cast<int64_t>(start),
                                                 log.begin() + static_cast<int64_t>(start) + N);
    sim::PacingStrategy play(
        params, [&learner](const std::vector<float>& s) { return learner.Act(s, true)[0]; }, true);
    sim::ReplayRlb(window, info, opt.protocol, play);
    play.Finish();
    for (const sim::PacingStep& st : play.steps()) {
      Transition t;
      t.s = st.s;
      t.s2 = st.s2;
      t.d = {0.0f};
      t.d2 = {0.0f};
      t.a = {static_cast<float>(st.a)};
      t.r = {static_cast<float>(st.reward)};
      t.done = st.done ? 1 : 0;
      t.episode = static_cast<uint64_t>(ep);
      t.step = static_cast<uint32_t>(&st - play.steps().data());
      RTB_RETURN_IF_ERROR(store->Append(t, {}).status());
      if (store->Size() < static_cast<uint64_t>(opt.hp.warmup_transitions)) continue;
      for (int u = 0; u < opt.hp.updates_per_step; ++u) {
        RTB_ASSIGN_OR_RETURN(auto mb,
                             store->Sample(static_cast<size_t>(opt.hp.batch_size), sample_rng));
        learner.Update({std::move(mb)});
      }
    }
    learner.EndEpisode();
    if (ep % opt.eval_every == 0 || ep == opt.episodes) {
      sim::PacingTable table = TableOf(learner, params);
      const sim::ReplayTotals t = PlayTable(log, info, opt.protocol, table);
      res.curve.push_back(t.expected_clicks);
      if (!have_best || t.expected_clicks > res.best_train.expected_clicks) {
        have_best = true;
        res.best_train = t;
        res.best_episode = ep;
        res.table = std::move(table);
      }
      if (opt.progress) {
        log::Get("pacing").info(
            "episode {}/{}  train expected clicks {:.2f} (lin b0 {}: {:.2f})  best {:.2f} @{}  "
            "noise {:.3f}",
            ep, opt.episodes, t.expected_clicks, params.b0, res.lin_train.expected_clicks,
            res.best_train.expected_clicks, res.best_episode, learner.noise_sigma());
      }
    }
  }
  return res;
}

}  // namespace rtb::learn
