import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Revision 15: full-text search over sessions (issue 26 item 7) — the dashboard's sessions page
 * finds a session by words of its title or of its messages' text, through two GIN indexes rather
 * than a scan.
 *
 * - `sessions_title_search_idx` indexes the title's words.
 * - `events_message_search_idx` is partial: only user and completed assistant messages, whose text
 *   `session_message_text` pulls out of the payload (the user message's text parts, the assistant's
 *   text). The `simple` configuration keeps every word as written (no stemming, no stop words), so
 *   a search in any language finds what was typed; the query matches word prefixes.
 */
export class SessionSearch1765000000000 implements MigrationInterface {
  name = 'SessionSearch1765000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION session_message_text(event_type text, payload jsonb) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
          SELECT CASE event_type
            WHEN 'assistant.message.completed' THEN coalesce(payload->>'text', '')
            ELSE coalesce((SELECT string_agg(part->>'text', ' ')
                             FROM jsonb_array_elements(CASE jsonb_typeof(payload->'content')
                                                         WHEN 'array' THEN payload->'content'
                                                         ELSE '[]'::jsonb END) AS part
                            WHERE part->>'type' = 'text'), '')
          END
        $$`);
    await q.query(
      `COMMENT ON FUNCTION session_message_text(text, jsonb) IS 'The searchable text of a user or assistant message event (events_message_search_idx).'`,
    );
    await q.query(
      `CREATE INDEX sessions_title_search_idx ON sessions USING gin (to_tsvector('simple'::regconfig, coalesce(title, '')))`,
    );
    await q.query(
      `CREATE INDEX events_message_search_idx ON events
         USING gin (to_tsvector('simple'::regconfig, session_message_text(event_type, payload)))
         WHERE event_type IN ('user.message.created', 'assistant.message.completed')`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX events_message_search_idx`);
    await q.query(`DROP INDEX sessions_title_search_idx`);
    await q.query(`DROP FUNCTION session_message_text(text, jsonb)`);
  }
}
