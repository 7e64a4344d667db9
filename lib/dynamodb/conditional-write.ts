/**
 * One conditional write on DynamoDB, as every adapter makes it: an UpdateItem or PutItem whose
 * refused condition is an answer, not a failure. Written, the answer carries the item the write asked
 * for (`ReturnValues`); refused, the item as it stands, from the refusal itself where the store
 * returns it (`ReturnValuesOnConditionCheckFailure: ALL_OLD`, which AWS honours at no read cost),
 * else from one consistent GetItem when the adapter gives one (`read`), else none.
 *
 * Requests: exactly the write, plus the adapter's GetItem only after a refusal that came without the
 * item. Every other failure is the adapter's own "store unavailable" error (`unavailable`); domain
 * errors stay with the adapter, which decides from `current`.
 */
import {
  ConditionalCheckFailedException,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
  type GetItemCommandInput,
  type PutItemCommandInput,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';

export type Item = Record<string, AttributeValue>;

/** The write: an UpdateItem or a PutItem, sent as given. */
export type ConditionalWriteInput = { readonly update: UpdateItemCommandInput } | { readonly put: PutItemCommandInput };

export type ConditionalWriteResult<T> =
  | { readonly written: true; readonly item: Item }
  | { readonly written: false; readonly current: T | undefined; readonly cause: ConditionalCheckFailedException };

export interface ConditionalWriteOptions<T> {
  /** Any failure but a refused condition, of the write or of the read, as the adapter reports its store unavailable. */
  readonly unavailable: (error: unknown, call: 'write' | 'read') => Error;
  /** The refused item as the adapter reads it. */
  readonly decode: (item: Item) => T;
  /** The consistent GetItem that tells what refused the write when the store did not return it; none if absent. */
  readonly read?: GetItemCommandInput;
}

export async function conditionalWrite<T>(
  client: DynamoDBClient,
  write: ConditionalWriteInput,
  options: ConditionalWriteOptions<T>,
): Promise<ConditionalWriteResult<T>> {
  try {
    const output = 'update' in write ? await client.send(new UpdateItemCommand(write.update)) : await client.send(new PutItemCommand(write.put));
    return { written: true, item: output.Attributes ?? {} };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw options.unavailable(error, 'write');
    const item = error.Item ?? (options.read === undefined ? undefined : await readItem(client, options.read, options.unavailable));
    return { written: false, current: item === undefined ? undefined : options.decode(item), cause: error };
  }
}

/** One GetItem as given (the adapter asks for it consistent): the item, or undefined where there is none. */
export async function readItem(client: DynamoDBClient, input: GetItemCommandInput, unavailable: ConditionalWriteOptions<unknown>['unavailable']): Promise<Item | undefined> {
  try {
    return (await client.send(new GetItemCommand(input))).Item;
  } catch (error) {
    throw unavailable(error, 'read');
  }
}

/** What failed, for a message: the error's name, never its content. */
export function errorName(error: unknown): string {
  return error instanceof Error ? error.name : 'error';
}
