/** Dead letters on SQS: each refused event, with the reason, as one message. */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DeadLetters } from '../core/intake.js';

export class SqsDeadLetters implements DeadLetters {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async send(letter: Parameters<DeadLetters['send']>[0]): Promise<void> {
    await this.sqs.send(new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: JSON.stringify(letter) }));
  }
}
