-- Argo CD health check for isolane.dev/Worker (resource.customizations.health.isolane.dev_Worker).
-- Lua 5.1, as Argo CD runs it. Tests: operator/tests/gitops.rs.
--
--   Progressing  no status yet, a status for an older generation (status.observedGeneration
--                or the Ready condition's observedGeneration below metadata.generation),
--                Ready missing or Unknown, or the Worker being deleted
--   Degraded     Ready=False, or ScriptValid, RoutesAdmitted (a route held by an older
--                Worker) or ServicesBound (a service binding to a Worker that does not
--                exist) False, for the current generation: the message is reason: message
--   Healthy      Ready=True for the current generation and no other condition False
local hs = {}
local generation = nil
if obj.metadata ~= nil then
  generation = obj.metadata.generation
  if obj.metadata.deletionTimestamp ~= nil then
    hs.status = "Progressing"
    hs.message = "Worker is being deleted"
    return hs
  end
end

local status = obj.status
if status == nil or status.observedGeneration == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to reconcile the Worker"
  return hs
end
if generation ~= nil and status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe generation " .. generation ..
    " (status is for generation " .. status.observedGeneration .. ")"
  return hs
end

local ready = nil
local failed = nil
if status.conditions ~= nil then
  for _, condition in ipairs(status.conditions) do
    if condition.type == "Ready" then
      ready = condition
    elseif condition.status == "False" and failed == nil then
      failed = condition
    end
  end
end

local function describe(condition)
  local text = condition.type .. "=" .. condition.status
  if condition.reason ~= nil and condition.reason ~= "" then
    text = text .. " " .. condition.reason
  end
  if condition.message ~= nil and condition.message ~= "" then
    text = text .. ": " .. condition.message
  end
  return text
end

if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the Ready condition"
  return hs
end
if generation ~= nil and ready.observedGeneration ~= nil and ready.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe generation " .. generation
  return hs
end
if ready.status == "False" then
  hs.status = "Degraded"
  hs.message = describe(ready)
  return hs
end
if failed ~= nil then
  hs.status = "Degraded"
  hs.message = describe(failed)
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
  if status.url ~= nil then
    hs.message = "Ready at " .. status.url
  else
    hs.message = "Ready"
  end
  return hs
end
hs.status = "Progressing"
hs.message = describe(ready)
return hs
