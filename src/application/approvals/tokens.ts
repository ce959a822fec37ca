/** Injection token of the ToolRecordStore port (tool invocations and approvals read models). */
export const TOOL_RECORDS = Symbol('ToolRecordStore');
