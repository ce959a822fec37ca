import { randomUUID } from 'node:crypto';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';

/**
 * The calculator turn on LangGraph.js with its PostgresSaver: a model node (a fake model answering
 * at once, as agent-core's fake model does: first a calculator call, then the answer from its
 * result), a prebuilt ToolNode, and one checkpointed thread per turn.
 */
export class LangGraphTurn {
  private constructor(
    private readonly graph: { invoke(input: unknown, config: unknown): Promise<unknown> },
    private readonly saver: PostgresSaver,
  ) {}

  static async open(url: string): Promise<LangGraphTurn> {
    const saver = PostgresSaver.fromConnString(url, { schema: 'langgraph_bench' });
    await saver.setup();
    const calculator = tool(({ expression }: { expression: string }) => String(evaluate(expression)), {
      name: 'calculator',
      description: 'Evaluates a product of two integers.',
      schema: {
        type: 'object',
        properties: { expression: { type: 'string' } },
        required: ['expression'],
      },
    });
    const model = (state: typeof MessagesAnnotation.State) => {
      const last = state.messages[state.messages.length - 1];
      if (last instanceof ToolMessage) return { messages: [new AIMessage(`The result is ${textOf(last.content)}.`)] };
      return {
        messages: [
          new AIMessage({
            content: '',
            tool_calls: [{ id: randomUUID(), name: 'calculator', args: { expression: '17 * 23' } }],
          }),
        ],
      };
    };
    const graph = new StateGraph(MessagesAnnotation)
      .addNode('model', model)
      .addNode('tools', new ToolNode([calculator]))
      .addEdge(START, 'model')
      .addConditionalEdges('model', (s) => {
        const last = s.messages[s.messages.length - 1] as AIMessage;
        return last.tool_calls && last.tool_calls.length > 0 ? 'tools' : END;
      })
      .addEdge('tools', 'model')
      .compile({ checkpointer: saver });
    return new LangGraphTurn(graph, saver);
  }

  /** One turn on a new thread; resolves with the answer's text. */
  async turn(text: string): Promise<string> {
    const out = (await this.graph.invoke(
      { messages: [new HumanMessage(text)] },
      { configurable: { thread_id: randomUUID() } },
    )) as typeof MessagesAnnotation.State;
    return textOf(out.messages[out.messages.length - 1].content);
  }

  async close(): Promise<void> {
    await this.saver.end();
  }
}

function evaluate(expression: string): number {
  const m = /^\s*(\d+)\s*\*\s*(\d+)\s*$/.exec(expression);
  if (!m) throw new Error(`not a product: ${expression}`);
  return Number(m[1]) * Number(m[2]);
}

/** A message's content as text (this graph's messages carry plain strings). */
function textOf(content: unknown): string {
  return typeof content === 'string' ? content : JSON.stringify(content);
}
