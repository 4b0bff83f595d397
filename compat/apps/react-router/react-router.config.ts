import type { Config } from "@react-router/dev/config";

// compat/bundle.mjs builds into its own output folder.
export default { ssr: true, appDirectory: "app", buildDirectory: process.env.RR_BUILD_DIR ?? "build" } satisfies Config;
