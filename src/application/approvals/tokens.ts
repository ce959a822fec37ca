/** Injection token of the ToolRecordStore port (tool invocations and approvals read models). */
export const TOOL_RECORDS = Symbol('ToolRecordStore');
/** Injection token of the ApprovalEditChecks port (schema and policy checks of edited arguments). */
export const APPROVAL_EDIT_CHECKS = Symbol('ApprovalEditChecks');
