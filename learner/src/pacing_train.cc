#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "rtb/core/log.h"
#include "rtb/core/rng.h"
#include "rtb/learner/agents.h"
#include "rtb/learner/pacing.h"
#include "rtb/learner/replay_store.h"
#include "rtb/simulator/ipinyou.h"
#include "rtb/simulator/rlb_dp.h"

namespace rtb::learn {
namespace {

sim::PacingTable TableOf(MultiAgentLearner& learner, const sim::PacingParams& p,
                         int price_buckets) {
  sim::PacingTable t;
  t.params = p;
  t.price_buckets = price_buckets;
  for (const auto& s : t.CellStates()) t.actions.push_back(learner.Act(s, false)[0]);
  return t;
}

sim::ReplayTotals PlayTable(const std::vector<sim::LoggedAuction>& log,
                            const sim::CampaignInfo& info, const sim::RlbProtocol& protocol,
                            const sim::PacingTable& t,
                            const std::shared_ptr<const sim::RlbValueFunction>& rlb) {
  sim::PacingStrategy s(
      t.params, [&t](const std::vector<float>& st) { return t.Lookup(st); }, false, rlb);
  return sim::ReplayRlb(log, info, protocol, s);
}

}  // namespace

bool KeepPacingTable(double candidate, double kept, bool validated,
                     const std::function<double()>& on_world, double base_world) {
  if (!(candidate > kept)) return false;
  return !validated || on_world() >= base_world;
}

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

Result<PacingTrainResult> TrainPacing(const std::vector<sim::LoggedAuction>& whole_log,
                                      const sim::CampaignInfo& info, const PacingTrainOptions& opt,
                                      const std::vector<sim::LoggedAuction>& given_validation) {
  const int64_t N = opt.protocol.episode_size;
  // The training log's last episodes held out (opt.holdout), when no validation log is given.
  std::vector<sim::LoggedAuction> head, tail;
  if (!(opt.holdout >= 0 && opt.holdout < 1)) {
    return Status::InvalidArgument("--holdout must be in [0, 1), got " +
                                   std::to_string(opt.holdout));
  }
  if (opt.holdout > 0 && !given_validation.empty()) {
    return Status::InvalidArgument(
        "--holdout and --validation-log both say where to compare "
        "tables: give one");
  }
  const bool hold = opt.holdout > 0;
  if (hold) {
    const int64_t episodes = static_cast<int64_t>(whole_log.size()) / N;
    const int64_t held = static_cast<int64_t>(opt.holdout * static_cast<double>(episodes));
    if (held < 1 || held >= episodes) {
      return Status::InvalidArgument("--holdout " + std::to_string(opt.holdout) + " of " +
                                     std::to_string(episodes) +
                                     " episodes leaves none to train on or none to compare on");
    }
    const auto cut = whole_log.begin() + (episodes - held) * N;
    head.assign(whole_log.begin(), cut);
    tail.assign(cut, whole_log.begin() + episodes * N);
  }
  const std::vector<sim::LoggedAuction>& log = hold ? head : whole_log;
  const std::vector<sim::LoggedAuction>& validation = hold ? tail : given_validation;
  if (opt.base != "lin" && opt.base != "rlb") {
    return Status::InvalidArgument("--base must be lin or rlb, got '" + opt.base + "'");
  }
  std::vector<sim::LoggedAuction> drawn;
  if (opt.prices == "histogram") {
    std::vector<double> pctrs;
    pctrs.reserve(log.size());
    for (const auto& a : log) pctrs.push_back(a.pctr);
    RTB_ASSIGN_OR_RETURN(
        drawn, sim::DrawAuctions(info, pctrs, opt.world_auctions, Rng::Mix(opt.seed, 0xd7a3)));
  } else if (opt.prices != "log") {
    return Status::InvalidArgument("--prices must be histogram or log, got '" + opt.prices + "'");
  }
  const std::vector<sim::LoggedAuction>& world = opt.prices == "log" ? log : drawn;
  if (static_cast<int64_t>(world.size()) < N) {
    return Status::InvalidArgument("the training " +
                                   std::string(opt.prices == "log" ? "log" : "world") + " has " +
                                   std::to_string(world.size()) +
                                   " auctions, fewer than one episode (" + std::to_string(N) + ")");
  }
  if (opt.steps <= 0 || N % opt.steps != 0) {
    return Status::InvalidArgument("--steps must divide the episode size");
  }
  auto replay_train = [&](sim::BidStrategy& s) {
    return sim::ReplayRlb(world, info, opt.protocol, s);
  };
  // Where tables are compared: the validation log when there is one, else the training world.
  const std::vector<sim::LoggedAuction>& select = validation.empty() ? world : validation;
  sim::PacingParams params;
  params.base = opt.base;
  params.first_price = opt.protocol.first_price;
  std::shared_ptr<const sim::RlbValueFunction> rlb;
  if (opt.base == "rlb") {
    RTB_ASSIGN_OR_RETURN(rlb, sim::RlbForCampaign(info, opt.protocol, "--base rlb"));
    params.c0 = opt.protocol.c0;
    params.max_bid = opt.protocol.max_bid;
  } else {
    params.b0 = opt.b0 > 0 ? opt.b0 : sim::TuneLinB0(replay_train, info.CtrTrain()).b0;
  }
  params.ctr_avg_train = info.CtrTrain();
  if (opt.price_buckets < 1 || (opt.price_buckets > 1 && !(info.CpmTrain() > 0))) {
    return Status::InvalidArgument(
        "--price-buckets must be at least 1, and above 1 needs the summary's cost_train");
  }
  if (opt.price_buckets > 1) params.price_avg = info.CpmTrain();
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
  if (rlb != nullptr && opt.parts > 0) {
    // RLB's program on the market by part of the episode, fitted on the training data; kept as
    // the base when the market moves by part of the day (both are replayed where tables are
    // compared, for the record).
    RTB_ASSIGN_OR_RETURN(
        sim::RlbStepModel model,
        sim::FitRlbStepModel(world, N, opt.parts, info.CtrTrain(), opt.protocol.max_bid));
    RTB_ASSIGN_OR_RETURN(auto by_part, sim::RlbForStepModel(info, opt.protocol, model));
    sim::RlbDpStrategy own(rlb), parted(by_part);
    res.rlb_own = sim::ReplayRlb(select, info, opt.protocol, own);
    res.rlb_by_part = sim::ReplayRlb(select, info, opt.protocol, parted);
    // Kept when the market moves by part of the day beyond what its samples explain: on a
    // stationary campaign the parts differ by noise alone, and RLB's own program is the one.
    res.price_chi2 = model.price_chi2;
    res.ctr_chi2 = model.ctr_chi2;
    res.chi2_critical = model.critical;
    if (model.Drifts()) {
      rlb = by_part;
      params.step_model = std::move(model);
      res.by_part = true;
    }
  }
  if (rlb != nullptr) {
    sim::RlbDpStrategy base(rlb);
    res.base_train = sim::ReplayRlb(select, info, opt.protocol, base);
  } else {
    auto lin = sim::LinBid(params.b0, params.ctr_avg_train);
    res.base_train = sim::ReplayRlb(select, info, opt.protocol, *lin);
  }
  Rng rng(Rng::Mix(opt.seed, 0x9ac1));
  Rng sample_rng(Rng::Mix(opt.seed, 0x5a3b));
  const uint64_t windows = world.size() - static_cast<uint64_t>(N) + 1;
  // The zero table (the base bid alone) is the first candidate: a learned table replaces it only
  // when it does better where tables are compared.
  res.table.params = params;
  res.table.price_buckets = opt.price_buckets;
  res.table.actions.assign(res.table.CellStates().size(), 0.0f);
  res.best_train = res.base_train;
  res.best_episode = 0;
  if (!validation.empty()) {
    res.base_world = PlayTable(world, info, opt.protocol, res.table, rlb);
    res.best_world = res.base_world;
  }
  for (int ep = 1; ep <= opt.episodes; ++ep) {
    // One episode on a random window of N auctions, the actor plus noise deciding.
    const size_t start = static_cast<size_t>(rng.UniformInt(windows));
    const std::vector<sim::LoggedAuction> window(world.begin() + static_cast<int64_t>(start),
                                                 world.begin() + static_cast<int64_t>(start) + N);
    sim::PacingStrategy play(
        params, [&learner](const std::vector<float>& s) { return learner.Act(s, true)[0]; }, true,
        rlb);
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
      sim::PacingTable table = TableOf(learner, params, opt.price_buckets);
      const sim::ReplayTotals t = PlayTable(select, info, opt.protocol, table, rlb);
      res.curve.push_back(t.expected_clicks);
      sim::ReplayTotals on_world;
      auto world_clicks = [&] {
        on_world = PlayTable(world, info, opt.protocol, table, rlb);
        return on_world.expected_clicks;
      };
      if (KeepPacingTable(t.expected_clicks, res.best_train.expected_clicks, !validation.empty(),
                          world_clicks, res.base_world.expected_clicks)) {
        res.best_train = t;
        res.best_world = on_world;
        res.best_episode = ep;
        res.table = std::move(table);
      } else if (on_world.auctions > 0) {
        ++res.rejected;  // better on the validation log alone
      }
      if (opt.progress) {
        log::Get("pacing").info(
            "episode {}/{}  expected clicks on the {} {:.2f} ({} alone: {:.2f})  best {:.2f} @{}  "
            "noise {:.3f}",
            ep, opt.episodes, validation.empty() ? "training data" : "validation log",
            t.expected_clicks, params.base, res.base_train.expected_clicks,
            res.best_train.expected_clicks, res.best_episode, learner.noise_sigma());
      }
    }
  }
  return res;
}

}  // namespace rtb::learn
