// RFC 9309 robots.txt: parsing, matching, fetch-result policy. Implementation in lib/robots/.
export {
  parseRobots,
  isAllowed,
  crawlDelayMs,
  sitemaps,
  productToken,
  robotsFromFetch,
  ROBOTS_MAX_BYTES,
  ALLOW_ALL,
  DISALLOW_ALL,
} from './robots/index';
export type { RobotsRules, MatchedRule, AllowResult, RobotsFetchResult, RobotsFromFetch } from './robots/index';
