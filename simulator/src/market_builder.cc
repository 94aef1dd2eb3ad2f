#include "rtb/simulator/market_builder.h"

#include "rtb/core/clustering.h"
#include "rtb/simulator/engine.h"

namespace rtb::sim {

Result<Market> BuildMarket(const Day& history, const MarketConfig& mcfg,
                           const AuctionConfig& acfg) {
  const size_t n_adv = history.num_advertisers;
  const size_t n_con = history.num_consumers;
  const int N = mcfg.agents, L = mcfg.consumer_clusters, T = history.steps;

  // Average pCVR per advertiser over its history candidates (bratio's denominator).
  std::vector<double> pcvr_sum(n_adv, 0.0);
  std::vector<double> presences(n_adv, 0.0);
  for (size_t c = 0; c < history.candidates(); ++c) {
    pcvr_sum[history.adv[c]] += history.pcvr[c];
    presences[history.adv[c]] += 1;
  }

  // Manual bids, unlimited budget, everyone in one agent and one cluster.
  Market one;
  one.agents = 1;
  one.clusters = 1;
  one.steps = T;
  one.agent_of.assign(n_adv, 0);
  one.cluster_of.assign(n_con, 0);
  one.d0 = {1.0};
  AuctionEngine engine(history, one, acfg, 0.0, {});
  engine.TrackRequests(true);
  engine.RunToEnd(ActionTable(1, 1));

  std::vector<double> adv_revenue(n_adv);
  for (size_t k = 0; k < n_adv; ++k) {
    adv_revenue[k] = static_cast<double>(engine.advertiser_outcomes()[k].revenue.value());
  }
  std::vector<double> con_revenue(n_con, 0.0), con_requests(n_con, 0.0);
  for (size_t r = 0; r < history.requests(); ++r) {
    con_revenue[history.consumer[r]] += static_cast<double>(engine.request_revenue()[r]);
    con_requests[history.consumer[r]] += 1;
  }

  Market m;
  m.agents = N;
  m.clusters = L;
  m.steps = T;
  m.avg_pcvr.resize(n_adv);
  for (size_t k = 0; k < n_adv; ++k)
    m.avg_pcvr[k] = presences[k] > 0 ? pcvr_sum[k] / presences[k] : 0;

  // Advertisers: ranked by revenue, N clusters of equal presences.
  auto agent_cut = EqualShareCut(adv_revenue, presences, N);
  if (!agent_cut.ok()) {
    return Status::InvalidArgument("clustering advertisers into " + std::to_string(N) +
                                   " agents: " + agent_cut.status().message());
  }
  m.agent_of.assign(n_adv, 0);
  for (size_t k = 0; k < n_adv; ++k) m.agent_of[k] = static_cast<uint16_t>((*agent_cut)[k]);

  // Consumers seen in history: ranked by revenue, L clusters of equal request shares.
  std::vector<uint32_t> seen;
  std::vector<double> seen_rev, seen_req;
  for (size_t u = 0; u < n_con; ++u) {
    if (con_requests[u] > 0) {
      seen.push_back(static_cast<uint32_t>(u));
      seen_rev.push_back(con_revenue[u]);
      seen_req.push_back(con_requests[u]);
    }
  }
  auto con_cut = EqualShareCut(seen_rev, seen_req, L);
  if (!con_cut.ok()) {
    return Status::InvalidArgument("clustering consumers into " + std::to_string(L) +
                                   " clusters: " + con_cut.status().message());
  }
  m.default_cluster = 0;
  m.cluster_of.assign(n_con, m.default_cluster);
  for (size_t s = 0; s < seen.size(); ++s)
    m.cluster_of[seen[s]] = static_cast<uint16_t>((*con_cut)[s]);

  // x_j history per step, and d0 from step 0 presences.
  m.revenue_hist.assign(static_cast<size_t>(T), std::vector<double>(static_cast<size_t>(L), 0.0));
  m.cost_hist = m.revenue_hist;
  std::vector<double> d0(static_cast<size_t>(N) * L, 0.0);
  double d0_total = 0;
  for (size_t r = 0; r < history.requests(); ++r) {
    const int t = history.StepOf(r);
    const int j = m.cluster_of[history.consumer[r]];
    m.revenue_hist[t][j] += engine.request_revenue()[r] / 1e6;
    m.cost_hist[t][j] += engine.request_cost()[r] / 1e6;
    if (t == 0) {
      for (uint32_t c = history.begin[r]; c < history.begin[r + 1]; ++c) {
        d0[static_cast<size_t>(m.agent_of[history.adv[c]]) * L + j] += 1;
        d0_total += 1;
      }
    }
  }
  for (double& x : d0) x = d0_total > 0 ? x / d0_total : 0;
  m.d0 = d0;

  m.agent_history.assign(static_cast<size_t>(N), Outcome{});
  m.agent_advertisers.assign(static_cast<size_t>(N), 0);
  m.agent_presences.assign(static_cast<size_t>(N), 0);
  for (size_t k = 0; k < n_adv; ++k) {
    const size_t i = m.agent_of[k];
    m.agent_history[i] += engine.advertiser_outcomes()[k];
    m.agent_advertisers[i] += 1;
    m.agent_presences[i] += static_cast<int64_t>(presences[k]);
  }
  return m;
}

}  // namespace rtb::sim
