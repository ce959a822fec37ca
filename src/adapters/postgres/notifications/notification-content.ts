import { RUN_EVENTS_JOIN } from '../event-codec';

/**
 * SQL for what a notification is about, for recipients whose preference is `content: full` (issue
 * 31 item 4): read from the source rows at read or delivery time, never stored in the notification.
 * `n` is the alias of a `notifications` row. CASE evaluates only the branch taken, so each
 * notification costs at most one indexed lookup.
 */
export const contentSql = (n: string): string => `CASE
  WHEN ${n}.kind IN ('approval.requested', 'tool.uncertain', 'approval.expiring', 'approval.expired') THEN
    (SELECT jsonb_build_object('action_summary', a.request->'actionSummary', 'arguments', a.request->'arguments')
       FROM approvals a WHERE a.id = ${n}.subject_id::uuid)
  WHEN ${n}.kind = 'run.waiting_for_user' THEN
    (SELECT jsonb_build_object('question', e.payload->'question') FROM runs r JOIN events e ON ${RUN_EVENTS_JOIN('r')}
      WHERE r.id = ${n}.run_id AND e.event_type = 'run.waiting_for_user' AND e.payload->>'questionId' = ${n}.subject_id
      LIMIT 1)
  WHEN ${n}.kind = 'run.failed' THEN
    (SELECT jsonb_build_object('message', e.payload->'message') FROM runs r JOIN events e ON ${RUN_EVENTS_JOIN('r')}
      WHERE r.id = ${n}.run_id AND e.event_type = 'run.failed' LIMIT 1)
  WHEN ${n}.kind = 'schedule.occurrence.failed' THEN
    (SELECT jsonb_build_object('message', e.payload->'message') FROM events e
      WHERE e.session_id = ${n}.session_id AND e.event_type = 'schedule.occurrence.failed'
        AND e.payload->>'occurrenceId' = ${n}.subject_id LIMIT 1)
  WHEN ${n}.kind = 'schedule.occurrence.completed' THEN
    (SELECT jsonb_build_object('final_text', r.final_text) FROM runs r WHERE r.id = ${n}.run_id)
END`;

/** SQL: the channel a principal's preferences give a kind (`p` a `notification_preferences` row, possibly absent). */
export const channelSql = (p: string, kind: string): string => `COALESCE(${p}.kinds->>${kind}, 'both')`;
